# claude-shim, PATH mode (fish). Printed by `claude-shim init fish`, which
# fills in the shim directory. The directory goes first on PATH, so this
# shell, the scripts it starts and the IDEs launched from it all find the shim
# as `claude`. Sourcing again moves it to the front instead of adding a copy.

set -l __claude_shim_dir __CLAUDE_SHIM_DIR__
while contains -- $__claude_shim_dir $PATH
    set -e PATH[(contains -i -- $__claude_shim_dir $PATH)]
end
set -gx PATH $__claude_shim_dir $PATH
# Tells `claude-shim doctor`/`status` how this shell reaches the shim.
set -gx CLAUDE_SHIM_MODE path
