//! The `requestState` of an approval asked over MCP 2026-07-28: piton keeps nothing
//! between the two rounds of a call, so what was shown to the person travels with
//! the client, sealed with an HMAC-SHA-256 under the approval key. Replicas that
//! share the key accept each other's states; nothing else can make one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use piton_wit::Hints;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use crate::config::approve::ApproveError;

const VERSION: u8 = 1;
/// What the MAC covers besides the payload, so a MAC made for anything else with the
/// same key never passes for an approval.
const DOMAIN: &[u8] = b"piton approval state v1\0";
/// A state longer than this is not one piton made (a tool name is at most 64 bytes).
const MAX_STATE_CHARS: usize = 512;

/// The key approvals are sealed with.
#[derive(Clone)]
pub struct ApprovalKey(hmac::Key);

impl std::fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalKey(..)")
    }
}

impl ApprovalKey {
    /// A key from a secret of at least
    /// [`MIN_KEY_BYTES`](crate::config::approve::MIN_KEY_BYTES) bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Self, ApproveError> {
        crate::config::approve::check_key(secret)?;
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }

    /// A key of this process only: its states are accepted by no other replica and
    /// by no later run. `None` when the system's random source fails.
    pub fn random() -> Option<Self> {
        let mut secret = [0u8; 32];
        SystemRandom::new().fill(&mut secret).ok()?;
        Some(Self(hmac::Key::new(hmac::HMAC_SHA256, &secret)))
    }
}

/// What one approval is for: the call as the person saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// The tool's name.
    pub tool: String,
    /// SHA-256 of the arguments (see [`super::form::args_digest`]).
    pub args_sha256: [u8; 32],
    /// The call's enforced hints.
    pub hints: Hints,
    /// SHA-256 of the grants shown (see [`super::form::Shown`]).
    pub grants_sha256: [u8; 32],
}

/// Why a `requestState` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not a state piton makes.
    #[error(
        "the approval state is not one piton made (malformed); ask again by calling without it"
    )]
    Malformed,
    /// Its MAC does not check: altered, or made with another key.
    #[error(
        "the approval state was altered or made with another approval key; replicas that \
         accept each other's approvals need the same [approve] key"
    )]
    Forged,
    /// Its time is over.
    #[error("the approval expired; call again to be asked again")]
    Expired,
    /// It was used before.
    #[error("the approval was already used; each approval runs one call")]
    Replayed,
    /// It was for another call.
    #[error("the approval was for {0}; call again to be asked about this call")]
    Mismatch(&'static str),
    /// No state could be made: the system's random source failed.
    #[error("piton could not make an approval state: the system's random source failed")]
    NoRandom,
}

/// Makes and checks states; remembers the ones used until they expire.
#[derive(Debug)]
pub struct Sealer {
    key: ApprovalKey,
    ttl: Duration,
    used: Mutex<HashMap<[u8; 16], u64>>,
}

/// States remembered as used at once, at most; past it the oldest expire early (a
/// state then cannot be replayed anyway: it is refused as expired).
const MAX_USED: usize = 100_000;

impl Sealer {
    /// States under `key`, valid for `ttl` after they are made.
    pub fn new(key: ApprovalKey, ttl: Duration) -> Self {
        Self {
            key,
            ttl,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// A state for `subject`, valid from `now` for the sealer's time.
    pub fn seal(&self, subject: &Subject, now: SystemTime) -> Result<String, StateError> {
        let mut nonce = [0u8; 16];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| StateError::NoRandom)?;
        let expires = unix(now).saturating_add(self.ttl.as_secs().max(1));
        let payload = encode(subject, &nonce, expires);
        let tag = hmac::sign(&self.key.0, &[DOMAIN, &payload].concat());
        Ok(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        ))
    }

    /// Checks `state` against the call now asked for, and marks it used: a state runs
    /// one call.
    pub fn redeem(&self, state: &str, call: &Subject, now: SystemTime) -> Result<(), StateError> {
        if state.len() > MAX_STATE_CHARS {
            return Err(StateError::Malformed);
        }
        let (payload, tag) = state.split_once('.').ok_or(StateError::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Malformed)?;
        if tag.len() != 32 {
            return Err(StateError::Malformed);
        }
        hmac::verify(&self.key.0, &[DOMAIN, &payload].concat(), &tag)
            .map_err(|_| StateError::Forged)?;
        let (sealed, nonce, expires) = decode(&payload).ok_or(StateError::Malformed)?;
        let now = unix(now);
        if now >= expires {
            return Err(StateError::Expired);
        }
        if sealed.tool != call.tool {
            return Err(StateError::Mismatch("another tool"));
        }
        if sealed.args_sha256 != call.args_sha256 {
            return Err(StateError::Mismatch("other arguments"));
        }
        if sealed.grants_sha256 != call.grants_sha256 {
            return Err(StateError::Mismatch(
                "other grants (piton.toml changed since)",
            ));
        }
        if sealed.hints != call.hints {
            return Err(StateError::Mismatch("other hints"));
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if used.len() >= MAX_USED {
            used.retain(|_, until| *until > now);
        }
        if used.len() >= MAX_USED {
            // Still full of live states: forget the ones nearest their end.
            let mut ends: Vec<u64> = used.values().copied().collect();
            ends.sort_unstable();
            let cut = ends[ends.len() / 2];
            used.retain(|_, until| *until > cut);
        }
        if used.insert(nonce, expires).is_some() {
            return Err(StateError::Replayed);
        }
        Ok(())
    }
}

fn unix(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn hint_bits(hints: Hints) -> u8 {
    u8::from(hints.is_read_only())
        | u8::from(hints.is_destructive()) << 1
        | u8::from(hints.is_idempotent()) << 2
        | u8::from(hints.is_open_world()) << 3
}

fn encode(subject: &Subject, nonce: &[u8; 16], expires: u64) -> Vec<u8> {
    let tool = subject.tool.as_bytes();
    let mut out = Vec::with_capacity(1 + 8 + 16 + 1 + 64 + 2 + tool.len());
    out.push(VERSION);
    out.extend_from_slice(&expires.to_be_bytes());
    out.extend_from_slice(nonce);
    out.push(hint_bits(subject.hints));
    out.extend_from_slice(&subject.args_sha256);
    out.extend_from_slice(&subject.grants_sha256);
    // Tool names are checked to at most 64 bytes; a longer one is cut, and then
    // cannot match.
    let len = u16::try_from(tool.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&tool[..usize::from(len)]);
    out
}

fn decode(payload: &[u8]) -> Option<(Subject, [u8; 16], u64)> {
    let (&version, rest) = payload.split_first()?;
    if version != VERSION {
        return None;
    }
    let (expires, rest) = rest.split_first_chunk::<8>()?;
    let (nonce, rest) = rest.split_first_chunk::<16>()?;
    let (&bits, rest) = rest.split_first()?;
    let (args, rest) = rest.split_first_chunk::<32>()?;
    let (grants, rest) = rest.split_first_chunk::<32>()?;
    let (len, tool) = rest.split_first_chunk::<2>()?;
    if tool.len() != usize::from(u16::from_be_bytes(*len)) {
        return None;
    }
    let hints = Hints::new(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0).ok()?;
    let subject = Subject {
        tool: String::from_utf8(tool.to_vec()).ok()?,
        args_sha256: *args,
        hints,
        grants_sha256: *grants,
    };
    Some((subject, *nonce, u64::from_be_bytes(*expires)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject {
        Subject {
            tool: "delete_file".into(),
            args_sha256: [1; 32],
            hints: Hints::worst(),
            grants_sha256: [2; 32],
        }
    }

    fn sealer() -> Sealer {
        Sealer::new(
            ApprovalKey::from_secret(&[7; 32]).unwrap(),
            Duration::from_secs(60),
        )
    }

    #[test]
    fn a_state_runs_the_call_it_was_made_for_once() {
        let sealer = sealer();
        let now = SystemTime::now();
        let state = sealer.seal(&subject(), now).unwrap();
        assert_eq!(sealer.redeem(&state, &subject(), now), Ok(()));
        assert_eq!(
            sealer.redeem(&state, &subject(), now),
            Err(StateError::Replayed)
        );
    }

    #[test]
    fn a_replica_with_the_same_key_accepts_it_and_one_with_another_refuses() {
        let now = SystemTime::now();
        let state = sealer().seal(&subject(), now).unwrap();
        assert_eq!(sealer().redeem(&state, &subject(), now), Ok(()));
        let other = Sealer::new(
            ApprovalKey::from_secret(&[8; 32]).unwrap(),
            Duration::from_secs(60),
        );
        assert_eq!(
            other.redeem(&state, &subject(), now),
            Err(StateError::Forged)
        );
        assert_eq!(
            Sealer::new(ApprovalKey::random().unwrap(), Duration::from_secs(60)).redeem(
                &state,
                &subject(),
                now
            ),
            Err(StateError::Forged)
        );
    }

    #[test]
    fn another_call_an_expired_or_altered_state_is_refused() {
        let sealer = sealer();
        let now = SystemTime::now();
        let state = sealer.seal(&subject(), now).unwrap();
        let mut other = subject();
        other.tool = "write_file".into();
        assert_eq!(
            sealer.redeem(&state, &other, now),
            Err(StateError::Mismatch("another tool"))
        );
        let mut other = subject();
        other.args_sha256[0] ^= 1;
        assert_eq!(
            sealer.redeem(&state, &other, now),
            Err(StateError::Mismatch("other arguments"))
        );
        let mut other = subject();
        other.grants_sha256[31] ^= 1;
        assert!(
            matches!(sealer.redeem(&state, &other, now), Err(StateError::Mismatch(m)) if m.starts_with("other grants"))
        );
        let mut other = subject();
        other.hints = Hints::worst().open_world(false);
        assert_eq!(
            sealer.redeem(&state, &other, now),
            Err(StateError::Mismatch("other hints"))
        );
        let later = now + Duration::from_secs(61);
        assert_eq!(
            sealer.redeem(&state, &subject(), later),
            Err(StateError::Expired)
        );
        // One bit flipped anywhere in the payload breaks the MAC.
        let (payload, tag) = state.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        bytes[1] ^= 0x80; // the expiry, pushed far into the future
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(
            sealer.redeem(&forged, &subject(), later),
            Err(StateError::Forged)
        );
        for junk in ["", ".", "a.b", "x", &"a".repeat(10_000)] {
            assert_eq!(
                sealer.redeem(junk, &subject(), now),
                Err(StateError::Malformed),
                "{junk:.20}"
            );
        }
    }

    #[test]
    fn short_keys_are_refused_with_the_fix() {
        let err = ApprovalKey::from_secret(b"hunter2").unwrap_err();
        assert!(matches!(err, ApproveError::ShortKey(7)), "{err:?}");
        // The text the person reads names the size and how to make a key.
        let err = err.to_string();
        assert!(
            err.contains("at least 32") && err.contains("/dev/urandom"),
            "{err}"
        );
    }
}
