"""Hardware documents for the ``full`` context level (data; a package only so that wheels carry the files)."""
