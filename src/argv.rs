//! Claude Code flag grammar (owned by the argv helper).
