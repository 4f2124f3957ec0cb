"""What a file a user or an earlier run provides must hold, checked before it is used: one module per kind
of file, one `check_*` function each, taking the parsed content and the path and raising
hil.base.errors.FileContentError (exit status 2) with one line naming the file and the field at fault."""
