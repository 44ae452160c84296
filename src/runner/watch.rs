//! What a run tells the turn as it goes ([`Watch`]), and what proves a held
//! run ([`Proof`]): what `tee` reports to and checks against.

use crate::observe::Observation;

/// What the turn learns while the run goes on.
pub trait Watch: Send + Sync {
    /// A result event was read. Called on the output thread before the
    /// result's bytes are passed on, so what is recorded here is recorded
    /// before the caller can act on the result.
    fn result(&self, obs: &Observation);
    /// The CLI can take no further message: text input, or the caller's
    /// stream-json input reached its end.
    fn input_closed(&self);
    /// A held run proved itself and its output now reaches the caller.
    fn committed(&self) {}
    /// A streaming caller is about to have the whole reply (the final
    /// `message_delta`; see `runner::seal`), before any result: the session
    /// file holds the turn. Called before those bytes are passed on.
    fn sealed(&self, _obs: &Observation) {}
}

/// What proves a held run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Proof {
    /// The CLI accepted the session: its init event, or a successful
    /// result (a resume attempt).
    #[default]
    Session,
    /// The model answered, or the run succeeded: past where the CLI could
    /// refuse the prompt as too long (a transcript that may not fit).
    Answer,
}

impl Proof {
    pub fn holds(self, obs: &Observation) -> bool {
        match self {
            Proof::Session => obs.init_session.is_some() || obs.has_success_result(),
            Proof::Answer => obs.answered || obs.has_success_result(),
        }
    }
}
