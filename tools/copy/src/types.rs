//! Keys of other types (`--all-types`): whether a target of another RDB
//! version can RESTORE a value of a file's type, and why not. Types 0–21
//! mean the same on every server, each from the RDB version that added it;
//! above 21 Redis (RDB 12–79) and Valkey (80 on) number their types apart
//! (Valkey's 22 is Redis' 7.4 pre-release hash), so such a value restores
//! only on a server of its own line (Valkey's `rdb.h`: "foreign" types).

/// Redis' and Valkey's RDB versions part at 12: 12–79 are Redis' own.
const VALKEY_FROM: u32 = 80;

fn line(version: u32) -> &'static str {
    match version {
        v if v >= VALKEY_FROM => "Valkey",
        v if v >= 12 => "Redis",
        _ => "",
    }
}

/// The RDB version that added type `t` in a file of `version`.
fn first_version(t: u8, version: u32) -> Option<u32> {
    Some(match (t, line(version)) {
        (0..=4, _) => 1,
        (5, _) => 8,
        (6 | 7, _) => 8,
        (9..=13, _) => 2,
        (14, _) => 7,
        (15, _) => 9,
        (16..=19, _) => 10,
        (20 | 21, _) => 11,
        (22..=25, "Redis") => 12,
        (26, "Redis") => 13,
        (22, "Valkey") => 80,
        _ => return None,
    })
}

/// Why a value of type `t` (`name`) from a file of RDB `version` cannot be
/// RESTOREd on a target of RDB `target`, if it cannot.
pub fn refused(t: u8, name: &str, version: u32, target: u32) -> Option<String> {
    let Some(first) = first_version(t, version) else {
        return Some(format!(
            "type {name} (RDB type {t} of RDB {version}) is not one this tool knows"
        ));
    };
    if t > 21 && line(version) != line(target) {
        return Some(format!(
            "type {name} is {}'s RDB type {t} (RDB {version}); on a {} server (RDB {target}) \
             that number means another type or none: no encoding it reads",
            line(version),
            if line(target).is_empty() {
                "pre-8"
            } else {
                line(target)
            },
        ));
    }
    (target < first).then(|| {
        format!(
            "type {name} (RDB type {t}) needs RDB {first}; the target writes RDB {target} and \
             cannot read it"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn what_restores_where() {
        // A string anywhere; a listpack set (RDB 11) not on Redis 7.0 (RDB 10).
        assert_eq!(refused(0, "string", 12, 10), None);
        assert_eq!(refused(20, "set", 11, 11), None);
        assert!(refused(20, "set", 80, 10).unwrap().contains("needs RDB 11"));
        // Hashes with field TTLs: within their own line only.
        assert_eq!(refused(25, "hash", 13, 12), None);
        assert!(refused(26, "stream", 13, 12)
            .unwrap()
            .contains("needs RDB 13"));
        assert!(refused(22, "hash", 80, 12)
            .unwrap()
            .contains("means another type"));
        assert!(refused(25, "hash", 12, 80)
            .unwrap()
            .contains("means another type"));
        assert!(refused(25, "hash", 12, 11).is_some());
        assert_eq!(refused(22, "hash", 80, 80), None);
        assert!(refused(8, "?", 12, 12).is_some());
    }
}
