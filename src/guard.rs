//! Recursion guard: a shim whose "real claude" is another shim must stop with
//! a clear error instead of looping.

/// More nested shims than this is a loop (a legitimately nested `claude`
/// inside a Bash tool of a session adds one level per session).
const MAX_DEPTH: u32 = 8;

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok { next: String },
    Loop(String),
}

/// Decide from the inherited guard, our pid and our parent's pid.
/// The value we pass on names our pid: seeing it again as our own pid (exec)
/// or as our parent (spawn) means the real binary we ran was a shim.
pub fn check(inherited: Option<(u32, u32)>, pid: u32, ppid: u32) -> Verdict {
    let depth = match inherited {
        None => 0,
        Some((_, owner)) if owner == pid || owner == ppid => {
            return Verdict::Loop(format!(
                "the real claude it ran is a shim again (pid {owner}); set {} to the real binary",
                crate::env::REAL
            ))
        }
        Some((depth, _)) if depth >= MAX_DEPTH => {
            return Verdict::Loop(format!(
                "{depth} nested shims; set {} to the real binary",
                crate::env::REAL
            ))
        }
        Some((depth, _)) => depth,
    };
    Verdict::Ok {
        next: format!("{}:{pid}", depth + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let ok = |s: &str| Verdict::Ok { next: s.into() };
        assert_eq!(check(None, 10, 1), ok("1:10"));
        assert_eq!(check(Some((1, 5)), 10, 9), ok("2:10"));
        assert!(matches!(check(Some((1, 10)), 10, 9), Verdict::Loop(_)));
        assert!(matches!(check(Some((1, 9)), 10, 9), Verdict::Loop(_)));
        assert!(matches!(check(Some((8, 3)), 10, 9), Verdict::Loop(_)));
        assert_eq!(check(Some((7, 3)), 10, 9), ok("8:10"));
    }
}
