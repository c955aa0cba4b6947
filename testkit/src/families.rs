//! Every data type the module adds, as the table-driven tests iterate
//! them. A new family adds its entry here (docs/testing.md).

/// One data type: how to make a key of it and which commands read and
/// write it. In `commands`, `K` stands for the key; each command names
/// exactly that key, the first one creates it.
pub struct Family {
    pub name: &'static str,
    /// What `TYPE` answers for a key of it.
    pub type_name: &'static str,
    /// `CONFIG SET` pairs a server needs for `commands` to create this type.
    pub config: &'static [(&'static str, &'static str)],
    pub commands: &'static [&'static [&'static str]],
}

pub const FAMILIES: &[Family] = &[
    Family {
        name: "bloom",
        type_name: rsbloom_core::bloom::TYPE.name(),
        config: &[],
        commands: &[
            &["BF.RESERVE", "K", "0.01", "100"],
            &["BF.ADD", "K", "a"],
            &["BF.MADD", "K", "b", "c"],
            &["BF.INSERT", "K", "ITEMS", "d"],
            &["BF.EXISTS", "K", "a"],
            &["BF.MEXISTS", "K", "a", "z"],
            &["BF.CARD", "K"],
            &["BF.INFO", "K"],
        ],
    },
    Family {
        name: "cuckoo",
        type_name: rsbloom_core::cuckoo::TYPE.name(),
        config: &[],
        commands: &[
            &["CF.RESERVE", "K", "100"],
            &["CF.ADD", "K", "a"],
            &["CF.ADDNX", "K", "b"],
            &["CF.INSERT", "K", "ITEMS", "c"],
            &["CF.INSERTNX", "K", "ITEMS", "d"],
            &["CF.EXISTS", "K", "a"],
            &["CF.MEXISTS", "K", "a", "z"],
            &["CF.COUNT", "K", "a"],
            &["CF.DEL", "K", "a"],
            &["CF.COMPACT", "K"],
            &["CF.INFO", "K"],
        ],
    },
    Family {
        name: "cms",
        type_name: rsbloom_core::cms::TYPE.name(),
        config: &[],
        commands: &[
            &["CMS.INITBYDIM", "K", "100", "5"],
            &["CMS.INCRBY", "K", "a", "3", "b", "1"],
            &["CMS.QUERY", "K", "a", "z"],
            &["CMS.INFO", "K"],
        ],
    },
    Family {
        name: "topk",
        type_name: rsbloom_core::topk::TYPE.name(),
        config: &[],
        commands: &[
            &["TOPK.RESERVE", "K", "3"],
            &["TOPK.ADD", "K", "a", "b", "a"],
            &["TOPK.INCRBY", "K", "c", "2"],
            &["TOPK.QUERY", "K", "a", "z"],
            &["TOPK.LIST", "K", "WITHCOUNT"],
            &["TOPK.INFO", "K"],
        ],
    },
    Family {
        name: "tdigest",
        type_name: rsbloom_core::tdigest::TYPE.name(),
        config: &[],
        commands: &[
            &["TDIGEST.CREATE", "K"],
            &["TDIGEST.ADD", "K", "1", "2", "3"],
            &["TDIGEST.QUANTILE", "K", "0.5"],
            &["TDIGEST.CDF", "K", "2"],
            &["TDIGEST.MIN", "K"],
            &["TDIGEST.INFO", "K"],
        ],
    },
    Family {
        name: "apbf",
        type_name: rsbloom_core::apbf::TYPE.name(),
        config: &[],
        commands: &[
            &["APBF.RESERVE", "K", "COUNT", "0.01", "100"],
            &["APBF.ADD", "K", "a", "b"],
            &["APBF.EXISTS", "K", "a", "z"],
            &["APBF.INFO", "K"],
        ],
    },
    Family {
        name: "valkey-bloom",
        type_name: rsbloom_core::valkey_bloom::TYPE.name(),
        config: &[
            ("bf.bloom-flavor", "valkey-bloom"),
            ("bf.bloom-use-random-seed", "no"),
        ],
        commands: &[
            &["BF.RESERVE", "K", "0.01", "100"],
            &["BF.ADD", "K", "a"],
            &["BF.MADD", "K", "b", "c"],
            &["BF.EXISTS", "K", "a"],
            &["BF.MEXISTS", "K", "a", "z"],
            &["BF.CARD", "K"],
            &["BF.INFO", "K"],
        ],
    },
];

impl Family {
    /// `commands` with `K` replaced by `key`.
    pub fn commands_on(&self, key: &str) -> Vec<Vec<String>> {
        self.commands
            .iter()
            .map(|c| {
                c.iter()
                    .map(|a| if *a == "K" { key } else { a }.to_string())
                    .collect()
            })
            .collect()
    }
}
