//! `COMMAND INFO` / `COMMAND DOCS` / `COMMAND GETKEYS` as RedisBloom 8.x
//! registers them (docs/module.md §2.1 arity, §2.3 key specs, docs and arguments).
use common::*;

/// One row of docs/module.md §2.1/§2.3. `args` is the argument tree in the
/// notation of §2.3: `name:type[TOKEN]{flags}(sub-arguments)`.
struct Row {
    name: &'static str,
    arity: i64,
    flags: &'static str,
    key: &'static str,
    since: &'static str,
    tips: &'static str,
    summary: &'static str,
    complexity: &'static str,
    args: &'static str,
}

/// The row of a family's TICK (rsbloom's: docs/cms-window.md §5,
/// docs/topk-window.md §5, docs/tdigest-window.md §4, docs/apbf.md §5), the
/// same command but for what it ages.
const fn tick(name: &'static str, summary: &'static str, complexity: &'static str) -> Row {
    Row {
        name,
        arity: 3,
        flags: "write",
        key: "RW",
        since: "0.1.0",
        tips: "",
        summary,
        complexity,
        args: "key:key unix-time-milliseconds:integer",
    }
}

const O_K_LAST: &str = "O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN_HASH: &str =
    "O(k * n), where k is the number of hash functions and n is the number of items";
const O_K_SUB: &str = "O(k), where k is the number of sub-filters";
const O_K_I: &str = "O(k + i), where k is the number of sub-filters and i is maxIterations";
const O_N_CAP: &str = "O(n), where n is the capacity";
const O_CF_INSERT: &str =
    "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";

const O_N_ITEMS: &str = "O(n) where n is the number of items";

const KEY_ITEM: &str = "key:key item:string";
const KEY_ITEMS: &str = "key:key item:string{multiple}";
const CF_INSERT_ARGS: &str =
    "key:key capacity:block{optional}(capacity:pure-token[CAPACITY] capacity:integer) \
     nocreate:pure-token[NOCREATE]{optional} items:pure-token[ITEMS] item:string{multiple}";

#[rustfmt::skip]
const ROWS: &[Row] = &[
    Row { name: "bf.add", arity: 3, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds an item to a Bloom Filter", complexity: O_K_LAST, args: KEY_ITEM },
    Row { name: "bf.card", arity: 2, flags: "readonly fast", key: "RO", since: "2.4.4", tips: "",
          summary: "Returns the cardinality of a Bloom filter", complexity: "O(1)", args: "key:key" },
    Row { name: "bf.debug", arity: 2, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "dont_cache",
          summary: "Returns internal debug information about a Bloom Filter",
          complexity: "O(n), where n is the number of sub-filters", args: "key:key" },
    Row { name: "bf.exists", arity: 3, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "",
          summary: "Checks whether an item exists in a Bloom Filter", complexity: O_K_LAST, args: KEY_ITEM },
    Row { name: "bf.info", arity: -2, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "dont_cache",
          summary: "Returns information about a Bloom Filter", complexity: "O(1)",
          args: "key:key single_value:oneof{optional}(capcaity:pure-token[CAPACITY] SIZE:pure-token[SIZE] \
                 FILTERS:pure-token[FILTERS] ITEMS:pure-token[ITEMS] EXPANSION:pure-token[EXPANSION])" },
    Row { name: "bf.insert", arity: -4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
          complexity: O_KN_HASH,
          args: "key:key capacity:block[CAPACITY]{optional}(capacity:integer) error:block[ERROR]{optional}(error:double) \
                 expansion:block[EXPANSION]{optional}(expansion:integer) nocreate:pure-token[NOCREATE]{optional} \
                 nonscaling:pure-token[NONSCALING]{optional} items:pure-token[ITEMS] item:string{multiple}" },
    Row { name: "bf.loadchunk", arity: 4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Restores a filter previously saved using SCANDUMP", complexity: O_N_CAP,
          args: "key:key iterator:integer data:string" },
    Row { name: "bf.madd", arity: -3, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
          complexity: O_KN_HASH, args: KEY_ITEMS },
    Row { name: "bf.mexists", arity: -3, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "",
          summary: "Checks whether one or more items exist in a Bloom Filter", complexity: O_KN_HASH, args: KEY_ITEMS },
    Row { name: "bf.reserve", arity: -4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Creates a new Bloom Filter", complexity: "O(1)",
          args: "key:key error_rate:double capacity:integer expansion:block[EXPANSION]{optional}(expansion:integer) \
                 nonscaling:pure-token[NONSCALING]{optional}" },
    Row { name: "bf.scandump", arity: 3, flags: "readonly fast", key: "RW", since: "1.0.0", tips: "dont_cache",
          summary: "Begins an incremental save of the bloom filter", complexity: O_N_CAP,
          args: "key:key iterator:integer" },
    Row { name: "cf.add", arity: 3, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds an item to a Cuckoo Filter", complexity: O_K_I, args: KEY_ITEM },
    Row { name: "cf.addnx", arity: 3, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds an item to a Cuckoo Filter if the item did not exist previously.", complexity: O_K_I,
          args: KEY_ITEM },
    Row { name: "cf.count", arity: 3, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "",
          summary: "Return the number of times an item might be in a Cuckoo Filter", complexity: O_K_SUB,
          args: KEY_ITEM },
    Row { name: "cf.del", arity: 3, flags: "write fast", key: "RW", since: "1.0.0", tips: "",
          summary: "Deletes an item from a Cuckoo Filter", complexity: O_K_SUB, args: KEY_ITEM },
    Row { name: "cf.debug", arity: 2, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "dont_cache",
          summary: "Returns internal debug information about a Cuckoo Filter", complexity: "O(1)", args: "key:key" },
    Row { name: "cf.exists", arity: 3, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "",
          summary: "Checks whether one or more items exist in a Cuckoo Filter", complexity: O_K_SUB, args: KEY_ITEM },
    Row { name: "cf.info", arity: 2, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "dont_cache",
          summary: "Returns information about a Cuckoo Filter", complexity: "O(1)", args: "key:key" },
    Row { name: "cf.insert", arity: -4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
          complexity: O_CF_INSERT, args: CF_INSERT_ARGS },
    Row { name: "cf.insertnx", arity: -4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Adds one or more items to a Cuckoo Filter if the items did not exist previously. \
                    A filter will be created if it does not exist",
          complexity: O_CF_INSERT, args: CF_INSERT_ARGS },
    Row { name: "cf.loadchunk", arity: 4, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Restores a filter previously saved using SCANDUMP", complexity: O_N_CAP,
          args: "key:key iterator:integer data:string" },
    Row { name: "cf.mexists", arity: -3, flags: "readonly fast", key: "RO", since: "1.0.0", tips: "",
          summary: "Checks whether one or more items exist in a Cuckoo Filter",
          complexity: "O(k * n), where k is the number of sub-filters and n is the number of items", args: KEY_ITEMS },
    Row { name: "cf.reserve", arity: -3, flags: "write denyoom", key: "RW", since: "1.0.0", tips: "",
          summary: "Creates a new Cuckoo Filter", complexity: "O(1)",
          args: "key:key capacity:integer bucketsize:block[BUCKETSIZE]{optional}(bucketsize:integer) \
                 maxiterations:block[MAXITERATIONS]{optional}(maxiterations:integer) \
                 expansion:block[EXPANSION]{optional}(expansion:integer)" },
    Row { name: "cf.scandump", arity: 3, flags: "readonly fast", key: "RW", since: "1.0.0", tips: "dont_cache",
          summary: "Begins an incremental save of the bloom filter", complexity: O_N_CAP,
          args: "key:key iterator:integer" },
    Row { name: "cms.incrby", arity: -4, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Changes the count of one or more items by increment, which may be negative", complexity: O_N_ITEMS,
          args: "key:key items:block{multiple}(item:string increment:integer)" },
    Row { name: "cms.info", arity: 2, flags: "readonly", key: "RO", since: "2.0.0", tips: "dont_cache",
          summary: "Returns information about a sketch", complexity: "O(1)", args: "key:key" },
    Row { name: "cms.initbydim", arity: -4, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Initializes a Count-Min Sketch to dimensions specified by user", complexity: "O(1)",
          args: "key:key width:integer depth:integer \
                 cellsize:block{optional}(cell_size:pure-token[CELL_SIZE] size:integer) \
                 window:block[WINDOW]{optional}(milliseconds:integer) \
                 buckets:block[BUCKETS]{optional}(buckets:integer)" },
    Row { name: "cms.initbyprob", arity: -4, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Initializes a Count-Min Sketch to accommodate requested tolerances.", complexity: "O(1)",
          args: "key:key error:double probability:double \
                 cellsize:block{optional}(cell_size:pure-token[CELL_SIZE] size:integer) \
                 window:block[WINDOW]{optional}(milliseconds:integer) \
                 buckets:block[BUCKETS]{optional}(buckets:integer)" },
    Row { name: "cms.merge", arity: -4, flags: "write denyoom movablekeys", key: "RW", since: "2.0.0", tips: "",
          summary: "Merges several sketches into one sketch", complexity: "O(n) where n is the number of sketches",
          args: "key:key numKeys:integer source:key{multiple} \
                 weights:block{optional}(weights:pure-token[WEIGHTS] weight:double{multiple})" },
    Row { name: "cms.query", arity: -3, flags: "readonly", key: "RO", since: "2.0.0", tips: "",
          summary: "Returns the count for one or more items in a sketch", complexity: O_N_ITEMS, args: KEY_ITEMS },
    // rsbloom's (docs/cms-window.md §5).
    tick("cms.tick", "Ages a windowed sketch to the given time (how the master's clock reaches replicas)",
         "O(n) where n is the number of counters of the buckets that expire"),
    Row { name: "topk.add", arity: -3, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Adds an item to a Top-k sketch. Multiple items can be added at the same time.",
          complexity: "O(n * k) where n is the number of items and k is the depth", args: KEY_ITEMS },
    Row { name: "topk.count", arity: -3, flags: "readonly", key: "RO", since: "2.0.0", tips: "",
          summary: "Return the count for one or more items are in a sketch",
          complexity: "O(n) where n is the number of items", args: KEY_ITEMS },
    Row { name: "topk.incrby", arity: -4, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Increases the count of one or more items by increment",
          complexity: "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
          args: "key:key item_increment:block{multiple}(item:string increment:integer)" },
    Row { name: "topk.info", arity: 2, flags: "readonly", key: "RO", since: "2.0.0", tips: "",
          summary: "Returns information about a sketch", complexity: "O(1)", args: "key:key" },
    Row { name: "topk.list", arity: -2, flags: "readonly", key: "RO", since: "2.0.0", tips: "",
          summary: "Return the full list of items in Top-K sketch.",
          complexity: "O(k*log(k)) where k is the value of top-k",
          args: "key:key withcount:pure-token[WITHCOUNT]{optional}" },
    Row { name: "topk.query", arity: -3, flags: "readonly", key: "RO", since: "2.0.0", tips: "",
          summary: "Checks whether one or more items are in a sketch",
          complexity: "O(n) where n is the number of items", args: KEY_ITEMS },
    Row { name: "topk.reserve", arity: -3, flags: "write denyoom", key: "RW", since: "2.0.0", tips: "",
          summary: "Initializes a Top-K sketch with specified parameters", complexity: "O(1)",
          args: "key:key topk:integer params:block{optional}(width:integer depth:integer decay:double) \
                 window:block[WINDOW]{optional}(milliseconds:integer) \
                 buckets:block[BUCKETS]{optional}(buckets:integer)" },
    // rsbloom's (docs/topk-window.md §5).
    tick("topk.tick", "Ages a windowed Top-K to the given time (how the master's clock reaches replicas)",
         "O(B * (w * d + k)) for the buckets that expire, then O(n * B * d) for the n items of the closed buckets' heaps"),
];

/// Commands with a `history` in COMMAND DOCS (RedisBloom's only one).
const WITH_HISTORY: &[&str] = &["topk.count"];

// ---- rendering helpers ----

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(r.as_bytes()).into_owned()
}

/// A reply as compact text: maps `{k: v, ...}`, arrays and sets `[a b]`.
fn render(r: &Reply) -> String {
    match r {
        Reply::Array(a) | Reply::Set(a) => {
            format!("[{}]", a.iter().map(render).collect::<Vec<_>>().join(" "))
        }
        Reply::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", render(k), render(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Reply::Int(i) => i.to_string(),
        Reply::Bulk(_) | Reply::Simple(_) | Reply::Verbatim(_) => text(r),
        other => format!("{other:?}"),
    }
}

fn get<'a>(map: &'a [(Reply, Reply)], key: &str) -> Option<&'a Reply> {
    map.iter().find(|(k, _)| text(k) == key).map(|(_, v)| v)
}

fn as_map(r: &Reply) -> &[(Reply, Reply)] {
    match r {
        Reply::Map(m) => m,
        other => panic!("expected map, got {other:?}"),
    }
}

/// Redis 8 and Valkey give every leaf argument (not oneof/block) a
/// `display_text` equal to its name; Redis 7.0 shows none (RedisBloom sets
/// none). Check that, then drop it, recursively.
fn strip_display_text(r: &Reply, flavor: Flavor) -> Reply {
    match r {
        Reply::Map(m) => {
            if let Some(ty) = get(m, "type") {
                let leaf = !matches!(text(ty).as_str(), "oneof" | "block");
                let d = get(m, "display_text");
                if flavor != Flavor::Redis7 && leaf {
                    assert_eq!(d, get(m, "name"), "{flavor:?}: {r:?}");
                } else {
                    assert!(d.is_none(), "{flavor:?}: {r:?}");
                }
            }
            Reply::Map(
                m.iter()
                    .filter(|(k, _)| text(k) != "display_text")
                    .map(|(k, v)| (k.clone(), strip_display_text(v, flavor)))
                    .collect(),
            )
        }
        Reply::Array(a) => Reply::Array(a.iter().map(|x| strip_display_text(x, flavor)).collect()),
        other => other.clone(),
    }
}

/// The `COMMAND DOCS` map of one command (RESP3), without `display_text`.
fn docs(c: &mut Conn, flavor: Flavor, name: &str) -> Reply {
    let r = c.cmd(&["COMMAND", "DOCS", name]);
    let m = as_map(&r);
    assert_eq!(m.len(), 1, "{r:?}");
    assert_eq!(text(&m[0].0), name.to_lowercase());
    strip_display_text(&m[0].1, flavor)
}

/// An argument list in the notation of docs/module.md §2.3: `name:type[TOKEN]{flags}(subargs)`.
fn signature(args: &Reply) -> String {
    args.as_array()
        .iter()
        .map(|a| {
            let m = as_map(a);
            let mut s = format!("{}:{}", text(&m[0].1), text(&m[1].1));
            assert_eq!(text(&m[0].0), "name");
            assert_eq!(text(&m[1].0), "type");
            if let Some(t) = get(m, "token") {
                s += &format!("[{}]", text(t));
            }
            if let Some(f) = get(m, "flags") {
                let f: Vec<String> = f.as_array().iter().map(text).collect();
                s += &format!("{{{}}}", f.join(","));
            }
            if let Some(sub) = get(m, "arguments") {
                s += &format!("({})", signature(sub));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn key_spec(access: &str) -> String {
    format!(
        "[[flags [{access}] begin_search [type index spec [index 1]] \
         find_keys [type range spec [lastkey 0 keystep 1 limit 0]]]]"
    )
}

/// A row's key specs: the MERGE commands also declare their sources.
fn row_specs(row: &Row) -> String {
    let mut specs = key_spec(row.key);
    if matches!(row.name, "cms.merge" | "tdigest.merge") {
        specs.pop();
        specs += " [flags [RO] begin_search [type index spec [index 2]] \
                  find_keys [type keynum spec [keynumidx 0 firstkey 1 keystep 1]]]]";
    }
    specs
}

/// COMMAND INFO of one row: name, arity, flags, key positions, tips, key
/// specs (`specs` rendered), no subcommands.
fn assert_command_info(c: &mut Conn, flavor: Flavor, row: &Row, specs: &str) {
    // Ask in upper case: lookup is case-insensitive, the name is the registered one.
    let r = c.cmd(&["COMMAND", "INFO", &row.name.to_uppercase()]);
    let info = r.as_array()[0].as_array();
    let ctx = format!("{flavor:?} {}: {r:?}", row.name);
    assert_eq!(text(&info[0]), row.name, "{ctx}");
    assert_eq!(info[1], int(row.arity), "{ctx}");
    let mut flags: Vec<String> = info[2].as_array().iter().map(text).collect();
    flags.sort();
    let mut want: Vec<String> = format!("{} module", row.flags)
        .split(' ')
        .map(String::from)
        .collect();
    want.sort();
    assert_eq!(flags, want, "{ctx}");
    assert_eq!(&info[3..6], &[int(1), int(1), int(1)], "{ctx}");
    let tips = if row.tips.is_empty() {
        "[]".to_string()
    } else {
        format!("[{}]", row.tips)
    };
    assert_eq!(render(&info[7]), tips, "{ctx}");
    assert_eq!(render(&info[8]), squash(specs), "{ctx}");
    assert_eq!(render(&info[9]), "[]", "{ctx}");
}

// ---- tests ----

#[test]
fn command_info_arity_flags_tips_and_key_specs() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for row in ROWS {
            assert_command_info(&mut c, flavor, row, &row_specs(row));
        }
    }
}

#[test]
fn command_docs_literals_and_arguments_of_every_command() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn3();
        for row in ROWS {
            let d = docs(&mut c, flavor, row.name);
            let m = as_map(&d);
            let keys: Vec<String> = m.iter().map(|(k, _)| text(k)).collect();
            let ctx = format!("{flavor:?} {}: {d:?}", row.name);
            // No doc_flags, deprecation or subcommands; history only where listed.
            let mut want = vec!["summary", "since", "group", "complexity", "module"];
            if WITH_HISTORY.contains(&row.name) {
                want.push("history");
            }
            want.push("arguments");
            assert_eq!(keys, want, "{ctx}");
            assert_eq!(text(&m[0].1), row.summary, "{ctx}");
            assert_eq!(text(&m[1].1), row.since, "{ctx}");
            assert_eq!(text(&m[2].1), "module", "{ctx}");
            assert_eq!(text(&m[3].1), row.complexity, "{ctx}");
            assert_eq!(text(&m[4].1), "bf", "{ctx}");
            assert_eq!(signature(&m[want.len() - 1].1), squash(row.args), "{ctx}");
        }
    }
}

#[test]
fn command_docs_in_full() {
    let expected = [
        (
            "BF.INFO",
            "{summary: Returns information about a Bloom Filter, since: 1.0.0, group: module, \
             complexity: O(1), module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: single_value, type: oneof, flags: [optional], arguments: [\
             {name: capcaity, type: pure-token, token: CAPACITY} \
             {name: SIZE, type: pure-token, token: SIZE} \
             {name: FILTERS, type: pure-token, token: FILTERS} \
             {name: ITEMS, type: pure-token, token: ITEMS} \
             {name: EXPANSION, type: pure-token, token: EXPANSION}]}]}",
        ),
        (
            "BF.INSERT",
            "{summary: Adds one or more items to a Bloom Filter. A filter will be created if it does not exist, \
             since: 1.0.0, group: module, \
             complexity: O(k * n), where k is the number of hash functions and n is the number of items, \
             module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: capacity, type: block, token: CAPACITY, flags: [optional], arguments: [\
             {name: capacity, type: integer}]} \
             {name: error, type: block, token: ERROR, flags: [optional], arguments: [\
             {name: error, type: double}]} \
             {name: expansion, type: block, token: EXPANSION, flags: [optional], arguments: [\
             {name: expansion, type: integer}]} \
             {name: nocreate, type: pure-token, token: NOCREATE, flags: [optional]} \
             {name: nonscaling, type: pure-token, token: NONSCALING, flags: [optional]} \
             {name: items, type: pure-token, token: ITEMS} \
             {name: item, type: string, flags: [multiple]}]}",
        ),
        (
            "CF.RESERVE",
            "{summary: Creates a new Cuckoo Filter, since: 1.0.0, group: module, \
             complexity: O(1), module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: capacity, type: integer} \
             {name: bucketsize, type: block, token: BUCKETSIZE, flags: [optional], arguments: [\
             {name: bucketsize, type: integer}]} \
             {name: maxiterations, type: block, token: MAXITERATIONS, flags: [optional], arguments: [\
             {name: maxiterations, type: integer}]} \
             {name: expansion, type: block, token: EXPANSION, flags: [optional], arguments: [\
             {name: expansion, type: integer}]}]}",
        ),
        (
            "CF.INSERTNX",
            "{summary: Adds one or more items to a Cuckoo Filter if the items did not exist previously. \
             A filter will be created if it does not exist, since: 1.0.0, group: module, \
             complexity: O(n * (k + i)), where n is the number of items, k is the number of sub-filters \
             and i is maxIterations, module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: capacity, type: block, flags: [optional], arguments: [\
             {name: capacity, type: pure-token, token: CAPACITY} \
             {name: capacity, type: integer}]} \
             {name: nocreate, type: pure-token, token: NOCREATE, flags: [optional]} \
             {name: items, type: pure-token, token: ITEMS} \
             {name: item, type: string, flags: [multiple]}]}",
        ),
        // Sources are keys of their own key spec (Redis 8.12).
        (
            "CMS.MERGE",
            "{summary: Merges several sketches into one sketch, since: 2.0.0, group: module, \
             complexity: O(n) where n is the number of sketches, module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: numKeys, type: integer} \
             {name: source, type: key, key_spec_index: 1, flags: [multiple]} \
             {name: weights, type: block, flags: [optional], arguments: [\
             {name: weights, type: pure-token, token: WEIGHTS} \
             {name: weight, type: double, flags: [multiple]}]}]}",
        ),
        (
            "TOPK.COUNT",
            "{summary: Return the count for one or more items are in a sketch, since: 2.0.0, group: module, \
             complexity: O(n) where n is the number of items, module: bf, history: [[2.4.0 As of Bloom version 2.4, \
             this command is regarded as deprecated. The count value is not a representative of the number of \
             appearances of an item]], arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: item, type: string, flags: [multiple]}]}",
        ),
        (
            "TOPK.RESERVE",
            "{summary: Initializes a Top-K sketch with specified parameters, since: 2.0.0, group: module, \
             complexity: O(1), module: bf, arguments: [\
             {name: key, type: key, key_spec_index: 0} \
             {name: topk, type: integer} \
             {name: params, type: block, flags: [optional], arguments: [\
             {name: width, type: integer} {name: depth, type: integer} {name: decay, type: double}]} \
             {name: window, type: block, token: WINDOW, flags: [optional], arguments: [\
             {name: milliseconds, type: integer}]} \
             {name: buckets, type: block, token: BUCKETS, flags: [optional], arguments: [\
             {name: buckets, type: integer}]}]}",
        ),
        // No command info at all: only what the server knows by itself.
        ("CF.COMPACT", "{group: module, module: bf}"),
    ];
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn3();
        for (name, want) in expected {
            let got = render(&docs(&mut c, flavor, name));
            assert_eq!(got, squash(want), "{flavor:?} {name}");
        }
    }
}

#[test]
fn cf_compact_keeps_legacy_command_info() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let r = s.conn().cmd(&["COMMAND", "INFO", "cf.compact"]);
        let info = r.as_array()[0].as_array();
        assert_eq!(text(&info[0]), "cf.compact");
        assert_eq!(info[1], int(-1), "{flavor:?} {r:?}");
        assert_eq!(&info[3..6], &[int(1), int(1), int(1)]);
        assert_eq!(render(&info[7]), "[]");
    }
}

#[test]
fn getkeys_and_server_side_arity_check() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            c.cmd(&["COMMAND", "GETKEYS", "BF.ADD", "k", "x"]),
            Reply::Array(vec![bulk("k")])
        );
        assert_eq!(
            c.cmd(&["COMMAND", "GETKEYS", "CF.INSERTNX", "k", "ITEMS", "a", "b"]),
            Reply::Array(vec![bulk("k")])
        );
        // Rejected by the server before the handler runs; the name is the
        // registered lower-case one whatever the client typed.
        let arity = |cmd: &str| format!("ERR wrong number of arguments for '{cmd}' command");
        for (args, name) in [
            (&["BF.ADD", "k"][..], "bf.add"),
            (&["Bf.Add", "k", "a", "b"][..], "bf.add"),
            (&["BF.MADD", "k"][..], "bf.madd"),
            (&["BF.INFO"][..], "bf.info"),
            (&["BF.CARD", "k", "x"][..], "bf.card"),
            (&["CF.RESERVE", "k"][..], "cf.reserve"),
            (&["CF.INSERTNX", "k", "ITEMS"][..], "cf.insertnx"),
            (&["CF.LOADCHUNK", "k", "1"][..], "cf.loadchunk"),
            (&["TOPK.ADD", "k"][..], "topk.add"),
            (&["TOPK.INCRBY", "k", "a"][..], "topk.incrby"),
            (&["TOPK.LIST"][..], "topk.list"),
            (&["TOPK.INFO", "k", "x"][..], "topk.info"),
        ] {
            assert_eq!(c.cmd(args), err(&arity(name)), "{flavor:?} {args:?}");
        }
        assert!(
            !s.log().contains("rejected the command info"),
            "{}",
            s.log()
        );
    }
}

/// docs/cms.md §1.2: CMS.MERGE declares its sources (Redis 8.12), so ACL
/// key patterns and cluster slot checks see them.
#[test]
fn cms_merge_declares_its_sources() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            c.cmd(&[
                "COMMAND",
                "GETKEYS",
                "CMS.MERGE",
                "d",
                "2",
                "s1",
                "s2",
                "WEIGHTS",
                "1",
                "2"
            ]),
            Reply::Array(vec![bulk("d"), bulk("s1"), bulk("s2")])
        );
        assert_eq!(
            c.cmd(&["COMMAND", "GETKEYS", "CMS.INCRBY", "k", "a", "1"]),
            Reply::Array(vec![bulk("k")])
        );
        assert_eq!(
            line(&mut c, "CMS.INCRBY k a"),
            err("ERR wrong number of arguments for 'cms.incrby' command")
        );
        assert_eq!(
            line(&mut c, "CMS.INITBYDIM k 1 1 CELL_SIZE"),
            err("ERR wrong number of arguments for 'cms.initbydim' command")
        );
    }
}

// ---- T-Digest (docs/tdigest.md §3) ----

const TD_KEY_VALUES: &str = "key:key value:double{multiple}";
const TD_COMPRESSION: &str =
    "compression_block:block{optional}(compression_token:pure-token[COMPRESSION] compression:integer)";
const O_N_VALUES: &str = "O(N) where N is the number of values specified.";

#[rustfmt::skip]
const TD_ROWS: &[Row] = &[
    Row { name: "tdigest.add", arity: -3, flags: "write denyoom", key: "RW", since: "2.4.0", tips: "",
          summary: "Adds one or more observations to a t-digest sketch",
          complexity: "O(N), where N is the number of samples to add", args: TD_KEY_VALUES },
    Row { name: "tdigest.byrank", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input rank, an estimation of the value (floating-point) with that rank",
          complexity: "O(N) where N is the number of ranks specified", args: "key:key rank:double{multiple}" },
    Row { name: "tdigest.byrevrank", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input reverse rank, an estimation of the value (floating-point) with that reverse rank",
          complexity: "O(N) where N is the number of reverse ranks specified.",
          args: "key:key reverse_rank:double{multiple}" },
    Row { name: "tdigest.cdf", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input value, an estimation of the floating-point fraction of (observations smaller \
                    than the given value + half the observations equal to the given value). Multiple fractions can be \
                    retrieved in a single call.",
          complexity: O_N_VALUES, args: TD_KEY_VALUES },
    Row { name: "tdigest.create", arity: -2, flags: "write denyoom", key: "RW", since: "2.4.0", tips: "",
          summary: "Allocates memory and initializes a new t-digest sketch", complexity: "O(1)",
          // WINDOW and BUCKETS: rsbloom's (docs/tdigest-window.md §4).
          args: "key:key compression_block:block{optional}(compression_token:pure-token[COMPRESSION] compression:integer) \
                 window_block:block{optional}(window_token:pure-token[WINDOW] window:integer) \
                 buckets_block:block{optional}(buckets_token:pure-token[BUCKETS] buckets:integer)" },
    Row { name: "tdigest.info", arity: 2, flags: "readonly", key: "RO", since: "2.4.0", tips: "dont_cache",
          summary: "Returns information and statistics about a t-digest sketch", complexity: "O(1)", args: "key:key" },
    Row { name: "tdigest.max", arity: 2, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns the maximum observation value from a t-digest sketch", complexity: "O(1)", args: "key:key" },
    // `movablekeys`: the server's, from the keynum key spec.
    Row { name: "tdigest.merge", arity: -4, flags: "write denyoom movablekeys", key: "RW", since: "2.4.0", tips: "",
          summary: "Merges multiple t-digest sketches into a single sketch",
          complexity: "O(N*K), where N is the number of centroids and K being the number of input sketches",
          args: "destination-key:key numkeys:integer source-key:key{multiple} \
                 compression_block:block{optional}(compression_token:pure-token[COMPRESSION] compression:integer) \
                 override:pure-token[OVERRIDE]{optional}" },
    Row { name: "tdigest.min", arity: 2, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns the minimum observation value from a t-digest sketch", complexity: "O(1)", args: "key:key" },
    Row { name: "tdigest.quantile", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input fraction, an estimation of the value (floating point) that is smaller than \
                    the given fraction of observations",
          complexity: "O(N) where N is the number of quantiles specified.", args: "key:key quantile:double{multiple}" },
    Row { name: "tdigest.rank", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input value (floating-point), the estimated rank of the value (the number of \
                    observations in the sketch that are smaller than the value + half the number of observations that \
                    are equal to the value)",
          complexity: O_N_VALUES, args: TD_KEY_VALUES },
    Row { name: "tdigest.reset", arity: 2, flags: "write denyoom", key: "RW", since: "2.4.0", tips: "",
          summary: "Resets a t-digest sketch: empty the sketch and re-initializes it.", complexity: "O(1)",
          args: "key:key" },
    Row { name: "tdigest.revrank", arity: -3, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns, for each input value (floating-point), the estimated reverse rank of the value (the number \
                    of observations in the sketch that are larger than the value + half the number of observations that \
                    are equal to the value)",
          complexity: O_N_VALUES, args: TD_KEY_VALUES },
    // rsbloom's (docs/tdigest-window.md §4).
    tick("tdigest.tick", "Ages a windowed t-digest to the given time (how the master's clock reaches replicas)",
         "O(N) where N is the number of centroids of the live buckets"),
    Row { name: "tdigest.trimmed_mean", arity: 4, flags: "readonly", key: "RO", since: "2.4.0", tips: "",
          summary: "Returns an estimation of the mean value from the sketch, excluding observation values outside the \
                    low and high cutoff quantiles",
          complexity: "O(N) where N is the number of centroids",
          args: "key:key low_cut_quantile:double high_cut_quantile:double" },
];

#[test]
fn tdigest_command_info_and_docs() {
    assert_eq!(
        TD_COMPRESSION,
        squash(TD_ROWS[4].args.trim_start_matches("key:key "))
            .split(" window_block")
            .next()
            .unwrap()
    );
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let mut c3 = s.conn3();
        for row in TD_ROWS {
            assert_command_info(&mut c, flavor, row, &row_specs(row));
            let ctx = format!("{flavor:?} {}", row.name);
            let d = docs(&mut c3, flavor, row.name);
            let m = as_map(&d);
            assert_eq!(text(&m[0].1), squash(row.summary), "{ctx}");
            assert_eq!(text(&m[1].1), row.since, "{ctx}");
            assert_eq!(text(&m[3].1), row.complexity, "{ctx}");
            assert_eq!(signature(&m[5].1), squash(row.args), "{ctx}");
        }
        // The sources are keys of the second key spec.
        let merge = render(&docs(&mut c3, flavor, "tdigest.merge"));
        assert!(
            merge.contains("{name: source-key, type: key, key_spec_index: 1, flags: [multiple]}"),
            "{merge}"
        );
        assert_eq!(
            c.cmd(&[
                "COMMAND",
                "GETKEYS",
                "TDIGEST.MERGE",
                "m",
                "2",
                "a",
                "b",
                "OVERRIDE"
            ]),
            Reply::Array(vec![bulk("m"), bulk("a"), bulk("b")])
        );
        assert_eq!(
            c.cmd(&["TDIGEST.CREATE"]),
            err("ERR wrong number of arguments for 'tdigest.create' command")
        );
    }
}

// ---- APBF (docs/apbf.md §5) ----

const AP_ITEMS: &str = "O(k·n) where n is the number of items";

#[rustfmt::skip]
const AP_ROWS: &[Row] = &[
    Row { name: "apbf.add", arity: -3, flags: "write denyoom", key: "RW", since: "0.1.0", tips: "",
          summary: "Adds items to a sliding-window filter; answers whether each was already present",
          complexity: AP_ITEMS, args: KEY_ITEMS },
    Row { name: "apbf.exists", arity: -3, flags: "readonly", key: "RO", since: "0.1.0", tips: "",
          summary: "Checks whether items were added within the window", complexity: AP_ITEMS,
          args: KEY_ITEMS },
    Row { name: "apbf.info", arity: 2, flags: "readonly", key: "RO", since: "0.1.0", tips: "dont_cache",
          summary: "Returns the parameters and state of a sliding-window filter", complexity: "O(1)",
          args: "key:key" },
    Row { name: "apbf.loadchunk", arity: 4, flags: "write denyoom", key: "RW", since: "0.1.0", tips: "",
          summary: "Restores a sliding-window filter saved with APBF.SCANDUMP", complexity: O_N_CAP,
          args: "key:key iterator:integer data:string" },
    Row { name: "apbf.reserve", arity: -5, flags: "write denyoom", key: "RW", since: "0.1.0", tips: "",
          summary: "Creates a sliding-window filter for the last N items or the last T seconds",
          complexity: O_N_CAP,
          args: "key:key window:oneof(count:pure-token[COUNT] time:pure-token[TIME]) error:double \
                 capacity:integer timespan:integer{optional}" },
    Row { name: "apbf.scandump", arity: 3, flags: "readonly", key: "RO", since: "0.1.0", tips: "dont_cache",
          summary: "Saves a sliding-window filter in chunks", complexity: O_N_CAP,
          args: "key:key iterator:integer" },
    tick("apbf.tick", "Ages a time-window filter to the given time (how the master's clock reaches replicas)",
         O_N_CAP),
];

#[test]
fn apbf_command_info_and_docs() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let mut c3 = s.conn3();
        for row in AP_ROWS {
            assert_command_info(&mut c, flavor, row, &key_spec(row.key));
            let ctx = format!("{flavor:?} {}", row.name);
            let d = docs(&mut c3, flavor, row.name);
            let m = as_map(&d);
            assert_eq!(text(&m[0].1), row.summary, "{ctx}");
            assert_eq!(text(&m[1].1), row.since, "{ctx}");
            assert_eq!(text(&m[3].1), row.complexity, "{ctx}");
            assert_eq!(signature(&m[5].1), squash(row.args), "{ctx}");
        }
        assert_eq!(
            c.cmd(&["COMMAND", "GETKEYS", "APBF.ADD", "k", "a", "b"]),
            Reply::Array(vec![bulk("k")])
        );
    }
}

/// docs/bloom.md §12: BF.MERGE, rsbloom's own, has key positions (1, -1, 1)
/// — destkey, then the sources, a key spec each — so key extraction and
/// cluster slot checks see every key, in both Bloom flavours' registrations
/// (valkey-bloom's has no command info: the positions alone).
#[test]
fn bf_merge_declares_every_key() {
    for flavor in flavors() {
        for valkey_bloom in [false, true] {
            let mut b = Server::builder(flavor, Module::Rsbloom);
            if valkey_bloom {
                b = b.valkey_bloom_flavor();
            }
            let s = b.start();
            let mut c = s.conn();
            let ctx = format!("{flavor:?}, valkey-bloom flavour {valkey_bloom}");
            assert_eq!(
                c.cmd(&["COMMAND", "GETKEYS", "BF.MERGE", "d", "a", "b"]),
                Reply::Array(vec![bulk("d"), bulk("a"), bulk("b")]),
                "{ctx}"
            );
            let r = c.cmd(&["COMMAND", "INFO", "BF.MERGE"]);
            let info = r.as_array()[0].as_array();
            assert_eq!(&info[3..6], &[int(1), int(-1), int(1)], "{ctx}");
            let name = if valkey_bloom { "BF.MERGE" } else { "bf.merge" };
            let arity = format!("ERR wrong number of arguments for '{name}' command");
            assert_eq!(line(&mut c, "BF.MERGE d"), err(&arity), "{ctx}");
            if valkey_bloom {
                continue;
            }
            assert_eq!(info[1], int(-3), "{ctx}");
            let specs = "[[flags [RW] begin_search [type index spec [index 1]] \
                 find_keys [type range spec [lastkey 0 keystep 1 limit 0]]] \
                 [flags [RO] begin_search [type index spec [index 2]] \
                 find_keys [type range spec [lastkey -1 keystep 1 limit 0]]]]";
            assert_eq!(render(&info[8]), squash(specs), "{ctx}");
        }
    }
}

/// Every command of every type of the table (`TYPES`, by its prefix) has
/// its row, but BF.LOAD, BF.MERGE and CF.COMPACT, checked by their own
/// tests.
#[test]
fn every_command_of_the_type_table_has_a_row() {
    let rows: Vec<&str> = ROWS
        .iter()
        .chain(TD_ROWS)
        .chain(AP_ROWS)
        .map(|r| r.name)
        .chain(["bf.load", "bf.merge", "cf.compact"])
        .collect();
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for t in common::families::TYPES {
            let pattern = format!("{}*", t.commands.to_lowercase());
            let listed = c.cmd(&["COMMAND", "LIST", "FILTERBY", "PATTERN", &pattern]);
            assert!(!listed.as_array().is_empty(), "{flavor:?} {pattern}");
            let missing: Vec<String> = listed
                .as_array()
                .iter()
                .map(text)
                .filter(|name| !rows.contains(&name.as_str()))
                .collect();
            assert!(missing.is_empty(), "{flavor:?}: no row for {missing:?}");
        }
    }
}
