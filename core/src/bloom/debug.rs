//! BF.DEBUG text (docs/bloom.md §7) and the C `%g` rendering of error rates it uses.

use super::{Chain, FORCE64};

/// Significant digits of C `%g`.
const G_PRECISION: i32 = 6;

impl Chain {
    /// `size:N`, then one line per link, oldest first.
    pub fn debug_lines(&self) -> Vec<String> {
        let width = if self.options() & FORCE64 != 0 {
            64
        } else {
            32
        };
        let mut lines = Vec::with_capacity(self.num_links() + 1);
        lines.push(format!("size:{}", self.items()));
        // C prints 2^n2 when bits is 0; loading rejects such links.
        lines.extend(self.links().iter().map(|l| {
            format!(
                "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
                l.bytes(),
                l.bits(),
                l.hashes(),
                width,
                l.entries(),
                l.size(),
                format_g(l.error())
            )
        }));
        lines
    }
}

/// Formats `v` like C `printf("%g", v)`: 6 significant digits, trailing zeros
/// dropped, scientific notation when the exponent is below -4 or at least 6.
pub fn format_g(v: f64) -> String {
    if !v.is_finite() {
        let text = if v.is_nan() { "nan" } else { "inf" };
        return if v.is_sign_negative() {
            format!("-{text}")
        } else {
            text.to_string()
        };
    }
    // The exponent is that of the value rounded to 6 digits, as in C.
    let sci = format!("{:.*e}", (G_PRECISION - 1) as usize, v);
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    if (-4..G_PRECISION).contains(&exp) {
        let fixed = format!("{:.*}", (G_PRECISION - 1 - exp) as usize, v);
        trim_fraction(&fixed).to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim_fraction(mantissa), sign, exp.abs())
    }
}

/// Drops trailing fractional zeros and a then-trailing decimal point.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_g_examples() {
        let cases = [
            (0.005, "0.005"),
            (0.0025, "0.0025"),
            (0.000625, "0.000625"),
            (6.25e-05, "6.25e-05"),
            (1.5625e-05, "1.5625e-05"),
            (0.25, "0.25"),
            (5e-07, "5e-07"),
            (0.0005, "0.0005"),
            (0.00125, "0.00125"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (1.0, "1"),
            (0.0, "0"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.123456789, "0.123457"),
            (9.9999996e-5, "0.0001"),
            (5e-324, "4.94066e-324"),
            (7.62939453125e-06, "7.62939e-06"),
            (-0.5, "-0.5"),
        ];
        for (v, text) in cases {
            assert_eq!(format_g(v), text, "{v:e}");
        }
    }
}
