"""What a person reads: terminal text, plotly figures, papermill reports, the explorer."""
