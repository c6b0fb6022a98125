//! Real tools as judges (written next).
