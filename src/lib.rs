//! claude-shim: a drop-in `claude` that resumes the Claude Code session a
//! replayed conversation already lives in. Modules in the order a call
//! flows through them (see README "How it works"):

// The shim face: which binary, which call, pass through or manage.
pub mod argv; //        Claude Code's flag grammar (commander's rules)
pub mod guard; //       recursion guard across nested shims
pub mod invocation; //  pass-through or managed, and why (pure)
pub mod locate; //      the real `claude` behind the shim
pub mod passthrough;
pub mod shim; //        argv[0] dispatch's shim face: guard, locate, classify // exec the real binary untouched

// One managed turn.
pub mod dialect; //     transcript dialects → conversation
pub mod events; //      stream-json lines, typed and parsed once
pub mod identity; //    scope parts, chains, nodes, reply hashes
pub mod observe; //     the CLI's output, read on the side
pub mod probe; //       what the real binary supports
pub mod prompt; //      where the prompt is; reading it; splicing it back
pub mod runner; //      spawn, stdin feed, tee with hold, signals, exit status
pub mod sessions; //    Claude Code's session files
pub mod store;
pub mod turn;
pub mod warm; //        live CLIs kept for a conversation's next turn (the keeper) //        the stages: understand, lookup, plan, attempt, run, record //       SQLite: capabilities, pins, leases, runs, attempts

// Around it.
pub mod cli;
pub mod env; //         every environment variable, typed
pub mod explain; //     `claude-shim explain`: a dry run of one turn
pub mod fleet; //       replicas sharing a PostgreSQL store: transcripts travel
pub mod log; //         debug log and errors.log
pub mod platform; //    Linux-only calls with portable fallbacks //         the management face
