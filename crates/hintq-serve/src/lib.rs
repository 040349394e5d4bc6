//! The servers Banga et al. and Provos & Lever measured their mechanisms with, built on
//! hintq's event API: `hintq serve` (static files, [`serve`]) and `hintq proxy` (a
//! non-caching reverse proxy, [`proxy`]). HTTP parsing and framing come from `hintq-http`
//! (no sockets there); threads from `hintq-patterns`. What both servers share is in a file per
//! concern: the output queue with `sendfile` ([`out`]), the socket calls ([`sys`]), the access
//! log ([`access_log`]), the connection count and drain ([`lifecycle`]), the signals
//! ([`signals`]), the `--stats` JSON ([`stats`]), the shared flags ([`args`]) and how both run
//! from the command line ([`run`]); running either over several worker processes
//! (`--processes`) in [`processes`].
//!
//! The modules import one another in one direction only: [`run`] uses [`processes`], [`args`],
//! [`signals`] and [`stats`]; [`processes`] uses [`signals`]; the servers use the rest.

pub mod access_log;
pub mod args;
pub mod lifecycle;
pub mod out;
pub mod processes;
pub mod proxy;
pub mod run;
pub mod serve;
pub mod signals;
pub mod stats;
pub mod sys;
