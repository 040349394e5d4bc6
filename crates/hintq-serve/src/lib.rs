//! The servers Banga et al. and Provos & Lever measured their mechanisms with, built on
//! hintq's event API: `hintq serve` (static files, [`serve`]) and `hintq proxy` (a
//! non-caching reverse proxy, [`proxy`]). HTTP parsing and framing come from `hintq-http`
//! (no sockets there); threads from `hintq-patterns`. What both servers share (output queue
//! with `sendfile`, access log, graceful shutdown, common flags) is in [`common`]; running
//! either over several worker processes (`--processes`) in [`processes`].

pub mod common;
pub mod processes;
pub mod proxy;
pub mod serve;
