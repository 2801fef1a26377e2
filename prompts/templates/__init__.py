"""Jinja2 templates of the prompts (data; a package only so that wheels carry the files)."""
