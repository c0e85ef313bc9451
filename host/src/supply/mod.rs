//! Where plugins come from and why they are trusted: the signatures on a component
//! ([`trust`]). Every way in ends in the same check: the bytes hash to the digest
//! recorded, and, if the policy says so, a signature over that digest verifies.

pub mod trust;
