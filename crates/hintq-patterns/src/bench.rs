//! The Strebelow & Prehofer experiment (filled below).
