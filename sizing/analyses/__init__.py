"""What calls the pipeline: sensitivity, plan-measurements, baseline compare, Kubernetes."""
