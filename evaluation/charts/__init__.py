"""Server-side charts: small pure functions that turn figures into geometry and colours for
templates (inline SVG, shaded HTML tables). No Django import, no JavaScript."""
