"""One module per on-disk format; each declares its binary layout once (see `_layout`)."""
