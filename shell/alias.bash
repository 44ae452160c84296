# shellcheck shell=bash
# claude-shim, alias mode (bash). Printed by `claude-shim init bash --mode
# alias`. `claude` typed in this shell goes through the shim; scripts and IDEs
# still run the real claude (`--mode path` covers them). Needs `claude-shim`
# on PATH. The function returns the shim's status, so `$?` is claude's.

\builtin unalias claude 2>/dev/null
# Tells `claude-shim doctor`/`status` how this shell reaches the shim.
export CLAUDE_SHIM_MODE=alias
function claude {
    \command claude-shim run -- "$@"
}
