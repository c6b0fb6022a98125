//! The sans-IO contract engine (to be written).
