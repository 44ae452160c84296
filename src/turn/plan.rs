//! Stage 3, plan: the decision, as pure functions over plain facts: which
//! pin (if any) this turn continues, and how to run it.

use crate::identity::{Difference, ReplyHash};
use crate::invocation::Mode;
use crate::probe::Capabilities as Caps;
use crate::store::pins::Pin;

/// Why a pin was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinMiss {
    /// No earlier turns in the prompt: a first turn.
    NoHistory,
    /// No dialect fits the prompt (the reason).
    NotRecognised(String),
    /// The new message alone, as the positional prompt of a call without
    /// `-p`, would run the subcommand it names ([`runs_a_subcommand`]).
    SubcommandWord(String),
    /// No pin of these turns in this scope. `elsewhere`: how the newest
    /// place the same turns were seen differs (empty: never seen).
    NoPin {
        elsewhere: Vec<Difference>,
    },
    /// Pins exist for these user turns but none holds the reply the caller
    /// replayed (it was edited, regenerated elsewhere, or never received).
    ReplyDiffers,
    BadSessionId,
}

/// Why a resumed turn cannot send `delta` as its positional prompt: without
/// `-p` a lone word that names a subcommand runs it (`claude --resume S
/// doctor` prints the CLI's doctor report), where the caller's whole
/// transcript was a prompt. Such a turn runs fresh, as asked.
pub fn runs_a_subcommand(mode: Mode, positional: bool, delta: &str) -> Option<PinMiss> {
    (mode == Mode::Printed && positional && crate::invocation::is_subcommand(delta))
        .then(|| PinMiss::SubcommandWord(delta.to_owned()))
}

/// Pick the pin whose captured reply matches the last assistant turn the
/// caller sent (proof of receipt). Newest first.
pub fn select<'a>(pins: &'a [Pin], replayed_reply_hash: &ReplyHash) -> Result<&'a Pin, PinMiss> {
    if pins.is_empty() {
        return Err(PinMiss::NoPin {
            elsewhere: Vec::new(),
        });
    }
    let pin = pins
        .iter()
        .find(|p| p.reply_hashes.contains(replayed_reply_hash))
        .ok_or(PinMiss::ReplyDiffers)?;
    // Both go into argv (`--resume S --resume-session-at AT`): anything but
    // a UUID (a damaged or tampered database) must never get there.
    let at_ok = pin
        .assistant_uuid
        .as_deref()
        .is_none_or(crate::sessions::valid_id);
    if crate::sessions::valid_id(&pin.session) && at_ok {
        Ok(pin)
    } else {
        Err(PinMiss::BadSessionId)
    }
}

/// The pin chosen for this turn, with what the effects found about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub session: String,
    /// Assistant message uuid the node ends at.
    pub at: Option<String>,
    pub file_exists: bool,
    /// The node is the session's latest.
    pub is_head: bool,
    /// We hold the in-place lease on the session.
    pub leased: bool,
    /// Times the CLI compacted the session (replaced history by a summary).
    pub compactions: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub forced_fresh: bool,
    /// The caller passed `--resume <this>` itself.
    pub caller_session: Option<String>,
    pub candidate: Result<Candidate, PinMiss>,
    pub caps: Caps,
    /// A fresh UUID for a new session, should one be needed.
    pub new_id: String,
    /// Past this many compactions a session no longer gives the model the
    /// conversation the transcript does: the turn runs fresh (`None`: no
    /// ceiling).
    pub max_compactions: Option<u32>,
    /// The same turn's last attempt ended without a result, and the caller
    /// asked for retries to continue it (`CLAUDE_SHIM_ON_RETRY=continue`).
    pub interrupted: Option<Interrupted>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    Forced,
    Missed(PinMiss),
    NoResumeSupport,
    SessionFileGone,
    CannotBranch,
    /// The caller resumes a session whose pinned history does not match.
    CallerSessionUnknown,
    /// The CLI refused the planned resume; the turn reran as asked.
    Refused,
    /// The session was compacted this many times: its summary is not the
    /// conversation; the full transcript goes instead.
    Compacted(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// `--resume S`
    InPlace,
    /// `--resume S --resume-session-at AT --fork-session --session-id NEW`
    ForkAt { at: String, new: String },
    /// `--resume S --fork-session --session-id NEW` (S's head is the node)
    ForkHead { new: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Run the original prompt, as a new session with this id.
    Fresh {
        session: String,
        why: Why,
    },
    Resume {
        session: String,
        how: How,
    },
    /// The caller's own `--resume S` holds the history: argv stays, the
    /// prompt shrinks to what S does not hold.
    Caller {
        session: String,
    },
    /// Run exactly as the caller asked; nothing is pinned.
    AsIs {
        why: Why,
    },
    /// The caller retries a turn whose earlier attempt was killed before
    /// its result: let that attempt's session finish the interrupted turn
    /// (`continues`: this many in a row, this one included).
    Continue {
        session: String,
        continues: u32,
    },
}

/// An earlier attempt of the same turn that ended without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    /// The session it was writing (its file exists).
    pub session: String,
    /// Continues in a row that led to it.
    pub continues: u32,
}

/// Continues in a row before a retry starts over.
pub const MAX_CONTINUES: u32 = 2;

impl Plan {
    /// The session the run will write to.
    pub fn target_session(&self) -> &str {
        match self {
            Plan::Fresh { session, .. } => session,
            Plan::Resume {
                how: How::ForkAt { new, .. } | How::ForkHead { new },
                ..
            } => new,
            Plan::Resume {
                session,
                how: How::InPlace,
            } => session,
            Plan::Caller { session } | Plan::Continue { session, .. } => session,
            Plan::AsIs { .. } => "",
        }
    }
}

pub fn plan(f: Facts) -> Plan {
    if let Some(session) = f.caller_session {
        // Strip only what that very session is known to hold.
        return match f.candidate {
            Ok(c) if c.session == session && c.file_exists && !f.forced_fresh => {
                Plan::Caller { session }
            }
            _ => Plan::AsIs {
                why: Why::CallerSessionUnknown,
            },
        };
    }
    // Every plan below passes session flags: a CLI that lacks one of them
    // runs as the caller asked.
    if !f.caps.sessions() {
        return Plan::AsIs {
            why: Why::NoResumeSupport,
        };
    }
    let fresh = |why| Plan::Fresh {
        session: f.new_id.clone(),
        why,
    };
    if f.forced_fresh {
        return fresh(Why::Forced);
    }
    if let Some(i) = f.interrupted.filter(|i| i.continues < MAX_CONTINUES) {
        if f.caps.resume {
            return Plan::Continue {
                session: i.session,
                continues: i.continues + 1,
            };
        }
    }
    let c = match f.candidate {
        Ok(c) => c,
        Err(miss) => return fresh(Why::Missed(miss)),
    };
    if !c.file_exists {
        return fresh(Why::SessionFileGone);
    }
    if f.max_compactions.is_some_and(|max| c.compactions >= max) {
        return fresh(Why::Compacted(c.compactions));
    }
    let resume = |how| Plan::Resume {
        session: c.session.clone(),
        how,
    };
    if c.is_head && c.leased {
        return resume(How::InPlace);
    }
    match &c.at {
        Some(at) => resume(How::ForkAt {
            at: at.clone(),
            new: f.new_id.clone(),
        }),
        _ if c.is_head => resume(How::ForkHead {
            new: f.new_id.clone(),
        }),
        _ => fresh(Why::CannotBranch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    fn all() -> Caps {
        Caps {
            version: "2.1.330".into(),
            resume: true,
            fork_session: true,
            session_id: true,
            resume_session_at: true,
        }
    }

    fn cand(file: bool, head: bool, leased: bool, at: Option<&str>) -> Result<Candidate, PinMiss> {
        Ok(Candidate {
            session: S.into(),
            at: at.map(Into::into),
            file_exists: file,
            is_head: head,
            leased,
            compactions: 0,
        })
    }

    #[test]
    fn plan_table() {
        let fresh = |why| Plan::Fresh {
            session: "N".into(),
            why,
        };
        let resume = |how| Plan::Resume {
            session: S.into(),
            how,
        };
        let at = How::ForkAt {
            at: "A".into(),
            new: "N".into(),
        };
        let no_at = Caps {
            resume_session_at: false,
            ..all()
        };
        let rows: Vec<(bool, Result<Candidate, PinMiss>, Caps, Plan)> = vec![
            (
                true,
                cand(true, true, true, Some("A")),
                all(),
                fresh(Why::Forced),
            ),
            (
                false,
                Err(PinMiss::NoPin { elsewhere: vec![] }),
                all(),
                fresh(Why::Missed(PinMiss::NoPin { elsewhere: vec![] })),
            ),
            (
                false,
                Err(PinMiss::ReplyDiffers),
                all(),
                fresh(Why::Missed(PinMiss::ReplyDiffers)),
            ),
            (
                false,
                cand(true, true, true, Some("A")),
                Caps::default(),
                Plan::AsIs {
                    why: Why::NoResumeSupport,
                },
            ),
            // No `--session-id` (before 1.0.5x): nothing can be named, not
            // even a fresh session; forced or not, the turn runs as asked.
            (
                true,
                cand(true, true, true, Some("A")),
                Caps {
                    session_id: false,
                    ..all()
                },
                Plan::AsIs {
                    why: Why::NoResumeSupport,
                },
            ),
            (
                false,
                Err(PinMiss::NoHistory),
                Caps {
                    session_id: false,
                    ..all()
                },
                Plan::AsIs {
                    why: Why::NoResumeSupport,
                },
            ),
            (
                false,
                cand(false, true, true, Some("A")),
                all(),
                fresh(Why::SessionFileGone),
            ),
            (
                false,
                cand(true, true, true, Some("A")),
                all(),
                resume(How::InPlace),
            ),
            (
                false,
                cand(true, true, true, None),
                all(),
                resume(How::InPlace),
            ),
            // Lease held elsewhere, or the node is behind the head: branch.
            (
                false,
                cand(true, true, false, Some("A")),
                all(),
                resume(at.clone()),
            ),
            (
                false,
                cand(true, false, false, Some("A")),
                all(),
                resume(at.clone()),
            ),
            // At the head but busy, with no uuid to branch at: from the head.
            (
                false,
                cand(true, true, false, None),
                all(),
                resume(How::ForkHead { new: "N".into() }),
            ),
            // No `--resume-session-at` (1.0.124–1.0.127): as asked.
            (
                false,
                cand(true, false, false, Some("A")),
                no_at,
                Plan::AsIs {
                    why: Why::NoResumeSupport,
                },
            ),
            (
                false,
                cand(true, false, false, None),
                all(),
                fresh(Why::CannotBranch),
            ),
            (
                false,
                cand(true, true, true, Some("A")),
                Caps {
                    fork_session: false,
                    ..all()
                },
                Plan::AsIs {
                    why: Why::NoResumeSupport,
                },
            ),
        ];
        for (i, (forced, candidate, caps, want)) in rows.into_iter().enumerate() {
            let got = plan(Facts {
                caller_session: None,
                forced_fresh: forced,
                candidate,
                caps,
                new_id: "N".into(),
                max_compactions: Some(3),
                interrupted: None,
            });
            assert_eq!(got, want, "row {i}");
        }
    }

    #[test]
    fn past_the_compaction_ceiling_the_turn_runs_fresh() {
        let facts = |compactions, max| Facts {
            forced_fresh: false,
            caller_session: None,
            candidate: Ok(Candidate {
                compactions,
                ..cand(true, true, true, Some("A")).unwrap()
            }),
            caps: all(),
            new_id: "N".into(),
            max_compactions: max,
            interrupted: None,
        };
        let in_place = Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        };
        assert_eq!(plan(facts(2, Some(3))), in_place);
        assert_eq!(
            plan(facts(3, Some(3))),
            Plan::Fresh {
                session: "N".into(),
                why: Why::Compacted(3)
            }
        );
        assert_eq!(plan(facts(9, None)), in_place, "no ceiling");
    }

    #[test]
    fn a_retry_of_an_interrupted_turn_continues_it_at_most_twice_in_a_row() {
        let facts = |continues| Facts {
            forced_fresh: false,
            caller_session: None,
            candidate: cand(true, true, true, Some("A")),
            caps: all(),
            new_id: "N".into(),
            max_compactions: Some(3),
            interrupted: Some(Interrupted {
                session: "K".into(),
                continues,
            }),
        };
        assert_eq!(
            plan(facts(0)),
            Plan::Continue {
                session: "K".into(),
                continues: 1
            }
        );
        assert_eq!(
            plan(facts(1)),
            Plan::Continue {
                session: "K".into(),
                continues: 2
            }
        );
        // Twice continued and killed again: start over as today.
        assert_eq!(
            plan(facts(2)),
            Plan::Resume {
                session: S.into(),
                how: How::InPlace
            }
        );
    }

    #[test]
    fn caller_resume_is_kept_or_left_alone() {
        let facts = |caller: &str, c| Facts {
            forced_fresh: false,
            caller_session: Some(caller.into()),
            candidate: c,
            caps: all(),
            new_id: "N".into(),
            max_compactions: Some(3),
            interrupted: None,
        };
        let asis = Plan::AsIs {
            why: Why::CallerSessionUnknown,
        };
        let pinned = cand(true, false, false, Some("A"));
        assert_eq!(
            plan(facts(S, pinned.clone())),
            Plan::Caller { session: S.into() }
        );
        assert_eq!(plan(facts("other", pinned)), asis);
        assert_eq!(plan(facts(S, cand(false, true, true, None))), asis);
        assert_eq!(plan(facts(S, Err(PinMiss::ReplyDiffers))), asis);
    }

    #[test]
    fn select_requires_the_reply() {
        let h = ReplyHash::of;
        let pin = |id: i64, reply: &str| Pin {
            id,
            session: S.into(),
            assistant_uuid: None,
            reply_hashes: vec![h(reply)],
            preamble_hash: None,
            turns: 1,
            created_at: 0,
            total_cost_usd: None,
        };
        let pins = vec![pin(2, "x"), pin(1, "y")];
        assert_eq!(select(&pins, &h("y")).map(|p| p.id), Ok(1));
        assert_eq!(
            select(&pins, &h("z")).map(|p| p.id),
            Err(PinMiss::ReplyDiffers)
        );
        assert_eq!(
            select(&[], &h("z")).map(|p| p.id),
            Err(PinMiss::NoPin { elsewhere: vec![] })
        );
        let bad = vec![Pin {
            session: "../x".into(),
            ..pin(3, "y")
        }];
        assert_eq!(
            select(&bad, &h("y")).map(|p| p.id),
            Err(PinMiss::BadSessionId)
        );
        for at in ["--dangerously-skip-permissions", "", "x"] {
            let bad = vec![Pin {
                assistant_uuid: Some(at.into()),
                ..pin(4, "y")
            }];
            assert_eq!(
                select(&bad, &h("y")).map(|p| p.id),
                Err(PinMiss::BadSessionId)
            );
        }
    }
}
