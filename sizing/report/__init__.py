"""What a person reads: terminal text, plotly figures, papermill reports, the explorer."""

import sys as _sys

# jsonschema (under nbformat, which papermill, nbconvert and plotly's notebook renderer
# import) checks the "iri" string formats with rfc3987_syntax when that is installed, and
# rfc3987_syntax compiles its grammar on import: about 2 s, in the report's process and again
# in its kernel. No notebook or schema here uses those formats, so the module is marked
# absent (jsonschema then skips the two checks) unless something imported it already.
_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
