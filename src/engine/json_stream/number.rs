//! A number token read one byte at a time: its grammar, and a summary that decides whether
//! serde_json's float parse keeps it finite once the token is too long to hold.
//!
//! Input: the token's bytes from [`super::JsonStream`]. Output: grammar errors as the byte
//! that breaks it arrives, and [`NumberScan::finite`]. A held token is judged by serde itself
//! ([`finite_token`]); a longer one by its magnitude, and at the edge of `f64`'s range by serde
//! on a short token with the same leading digits (a dropped non-zero digit kept as a trailing
//! `1`, so correct rounding rounds the same way).

/// Leading significant digits kept for a long token.
const KEPT_DIGITS: usize = 32;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    #[default]
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ExpSign,
    Exp,
}

/// One number token's grammar state and magnitude summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct NumberScan {
    phase: Phase,
    negative: bool,
    /// The first significant digits.
    digits: [u8; KEPT_DIGITS],
    kept: usize,
    /// A significant digit past [`KEPT_DIGITS`] was not zero.
    dropped_nonzero: bool,
    /// The value is `0.d1d2... × 10^(lead + exponent)`.
    lead: i64,
    exponent: i64,
    exponent_negative: bool,
}

impl NumberScan {
    /// Whether `byte` can continue a number token (whether it does is [`NumberScan::step`]'s).
    pub fn takes(&self, byte: u8) -> bool {
        matches!(byte, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
    }

    pub fn step(&mut self, byte: u8) -> Result<(), &'static str> {
        self.phase = match (self.phase, byte) {
            (Phase::Start, b'-') => {
                self.negative = true;
                Phase::Minus
            }
            (Phase::Start | Phase::Minus, b'0') => Phase::Zero,
            (Phase::Start | Phase::Minus | Phase::Int, b'0'..=b'9') => {
                self.integer_digit(byte);
                Phase::Int
            }
            (Phase::Zero | Phase::Int, b'.') => Phase::Dot,
            (Phase::Dot | Phase::Frac, b'0'..=b'9') => {
                self.fraction_digit(byte);
                Phase::Frac
            }
            (Phase::Zero | Phase::Int | Phase::Frac, b'e' | b'E') => Phase::E,
            (Phase::E, b'+' | b'-') => {
                self.exponent_negative = byte == b'-';
                Phase::ExpSign
            }
            (Phase::E | Phase::ExpSign | Phase::Exp, b'0'..=b'9') => {
                self.exponent = self
                    .exponent
                    .saturating_mul(10)
                    .saturating_add(i64::from(byte - b'0'));
                Phase::Exp
            }
            _ => return Err("invalid number"),
        };
        Ok(())
    }

    /// Whether the token read so far is a whole number.
    pub fn complete(&self) -> bool {
        matches!(
            self.phase,
            Phase::Zero | Phase::Int | Phase::Frac | Phase::Exp
        )
    }

    fn significant(&mut self, byte: u8) {
        if self.kept < KEPT_DIGITS {
            self.digits[self.kept] = byte;
            self.kept += 1;
        } else if byte != b'0' {
            self.dropped_nonzero = true;
        }
    }

    fn integer_digit(&mut self, byte: u8) {
        if self.kept > 0 || byte != b'0' {
            self.lead = self.lead.saturating_add(1);
            self.significant(byte);
        }
    }

    fn fraction_digit(&mut self, byte: u8) {
        if self.kept == 0 && byte == b'0' {
            self.lead = self.lead.saturating_sub(1);
        } else {
            self.significant(byte);
        }
    }

    /// Whether serde's float parse of the whole token gives a finite value.
    pub fn finite(&self) -> Result<bool, &'static str> {
        if !self.complete() {
            return Err("invalid number");
        }
        if self.kept == 0 {
            return Ok(true);
        }
        let exponent = if self.exponent_negative {
            -self.exponent
        } else {
            self.exponent
        };
        let magnitude = self.lead.saturating_add(exponent);
        if magnitude <= 308 {
            return Ok(true);
        }
        if magnitude >= 310 {
            return Ok(false);
        }
        let digits = String::from_utf8_lossy(&self.digits[..self.kept]);
        let sticky = if self.dropped_nonzero { "1" } else { "" };
        let sign = if self.negative { "-" } else { "" };
        finite_token(&format!("{sign}0.{digits}{sticky}e{magnitude}"))
    }
}

/// Whether serde reads this grammatical number token to a finite value (it refuses the rest
/// as out of range).
pub fn finite_token(token: &str) -> Result<bool, &'static str> {
    Ok(serde_json::from_str::<serde_json::Value>(token).is_ok())
}
