"""Instance catalog: loading and validating it, and building it from providers ' public files."""
