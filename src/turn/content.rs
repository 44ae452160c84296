//! Continuation by content, with the store: when no dialect reads a prompt,
//! is it an earlier run's prompt and reply, then something new? The match
//! itself is pure (`crate::continuation`); here the scope's kept prompts are
//! tried, newest first, each read only when its reply is in the prompt.

use super::lookup::{self, Found, Mode, Place, Query};
use super::plan::PinMiss;
use super::understand::Understood;
use crate::argv::ParsedArgs;
use crate::continuation::{self, Earlier};
use crate::dialect::{Continued, Conversation, Role};
use crate::identity::{normalize_reply, Chain};
use crate::probe::Capabilities;
use crate::store::prompts::Prompted;
use anyhow::Result;

/// Understand and look up, as a turn does: a prompt no dialect reads is
/// tried by content first; a prompt a dialect reads as a first turn, or
/// into turns never seen, is tried by content after (a reply that quotes a
/// role marker makes a dialect split or start the prompt wrongly).
pub fn look(
    place: &Place,
    args: &ParsedArgs,
    caps: &Capabilities,
    text: Option<&str>,
    u: Understood,
    mode: Mode,
) -> Result<(Understood, Found)> {
    let query = |u: &Understood| -> Result<Found> {
        lookup::lookup(
            place,
            &Query {
                args,
                conv: &u.conv,
                unrecognised: u.unrecognised.as_deref(),
                caps,
            },
            mode,
        )
    };
    let text = text.filter(|t| !t.trim().is_empty());
    let u = match (text, u.unrecognised.is_some()) {
        (Some(t), true) => match by_content(place, args, caps, t)? {
            Some(conv) => Understood {
                conv,
                unrecognised: None,
            },
            None => u,
        },
        _ => u,
    };
    let found = query(&u)?;
    // Read as a first turn, as turns never seen, or with a reply that
    // differs: a dialect that keeps a client's closing mark (`[Assistant:
    // r]`) reads every reply so. Content still asks the exact reply and the
    // earlier prompt, and `misread` that the dialect read the turns otherwise,
    // so an edited or guessed reply stays the miss it is.
    let missed = matches!(
        found.candidate,
        Err(PinMiss::NoHistory) | Err(PinMiss::NoPin { .. }) | Err(PinMiss::ReplyDiffers)
    );
    if let (true, Some(t), None) = (missed, text, &u.conv.continued) {
        if let Some(conv) = by_content(place, args, caps, t)?.filter(|c| misread(&u.conv, c)) {
            let by = Understood {
                conv,
                unrecognised: None,
            };
            drop(found);
            let again = query(&by)?;
            return Ok((by, again));
        }
    }
    Ok((u, found))
}

/// Whether the dialect read the turns otherwise than they were recorded:
/// it saw no history, or no reading of its turns up to the reply content
/// found gives the chain that run was pinned with (its first turn was read
/// as a whole, or a reply that quotes a role marker was split). A dialect
/// that reads those turns as recorded read the prompt right, and its miss
/// (an edited later turn) stands.
fn misread(dialect: &Conversation, by_content: &Conversation) -> bool {
    let (Some(reply), Some(found)) = (by_content.last_assistant(), &by_content.continued) else {
        return false;
    };
    let reply = normalize_reply(reply);
    !dialect.prior.iter().enumerate().any(|(i, t)| {
        t.role == Role::Assistant
            && normalize_reply(&t.text) == reply
            && Chain::of(&dialect.prior[..i]) == found.chain
    })
}

/// The conversation `text` continues by content in this turn's scope.
pub fn by_content(
    place: &Place,
    args: &ParsedArgs,
    caps: &Capabilities,
    text: &str,
) -> Result<Option<Conversation>> {
    let scope = lookup::scope_of(place, args, caps).scope();
    let candidates = place.store.lock().prompted(&scope)?;
    let replies: Vec<&str> = candidates
        .iter()
        .flat_map(|c| fitting_replies(text, c))
        .collect();
    let occurring = continuation::occurring(text, &replies);
    let may_continue = |c: &&Prompted| fitting_replies(text, c).any(|r| occurring.contains(r));
    for cand in candidates.iter().filter(may_continue) {
        let Some(earlier) = place.store.lock().prompt_of(cand.pin)? else {
            continue;
        };
        let earlier = Earlier {
            prompt: &earlier,
            replies: &cand.replies,
            turns: cand.turns,
        };
        if let Some(c) = continuation::continues(text, &earlier) {
            let continued = Continued {
                pin: cand.pin,
                chain: cand.chain.clone(),
                turns: cand.turns,
                session: cand.session.clone(),
                conv_key: cand.conv_key.clone(),
            };
            crate::debug!("continues pin {} by content", cand.pin);
            return Ok(Some(Conversation::continuing(
                continued,
                c.reply_text(text),
                c.delta_text(text),
            )));
        }
    }
    Ok(None)
}

/// The candidate's replies that `text` is long enough to hold with the
/// candidate's prompt (less a changed label). The candidate may continue
/// only if one of them is in `text`.
fn fitting_replies<'c>(text: &str, c: &'c Prompted) -> impl Iterator<Item = &'c str> {
    let room = text.len() + continuation::SLACK;
    c.replies
        .iter()
        .map(|r| r.trim())
        .filter(move |r| !r.is_empty() && c.prompt_len + r.len() <= room)
}
