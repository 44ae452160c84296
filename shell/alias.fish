# claude-shim, alias mode (fish). Printed by `claude-shim init fish --mode
# alias`. `claude` typed in this shell goes through the shim; scripts and IDEs
# still run the real claude (`--mode path` covers them). Needs `claude-shim`
# on PATH. The function returns the shim's status, so `$status` is claude's.

# Tells `claude-shim doctor`/`status` how this shell reaches the shim.
set -gx CLAUDE_SHIM_MODE alias

function claude --description 'claude through claude-shim'
    command claude-shim run -- $argv
end
