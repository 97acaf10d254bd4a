//! The DDL and dictionary rows of SnapshotDB format 3, exactly as the reference writes them.

/// Action codes of the `trace_entry_<d>.action` column, in dictionary order.
pub const ACTIONS: [(i64, &str); 9] = [
    (0, "segment_map"),
    (1, "segment_unmap"),
    (2, "segment_alloc"),
    (3, "segment_free"),
    (4, "alloc"),
    (5, "free_requested"),
    (6, "free_completed"),
    (7, "workspace_snapshot"),
    (8, "oom"),
];

/// Block state codes of the `block_<d>.state` column, in dictionary order.
/// The columns every `trace_entry_<d>` table has, in table order (the callstack column, which
/// differs between layouts v1 and v2, aside).
pub const TRACE_COLUMNS: [&str; 8] = [
    "id",
    "action",
    "address",
    "size",
    "stream",
    "allocated",
    "active",
    "reserved",
];

/// A `block_<d>` table's columns, in table order.
pub const BLOCK_COLUMNS: [&str; 7] = [
    "id",
    "address",
    "size",
    "requestedSize",
    "state",
    "allocEventId",
    "freeEventId",
];

pub const BLOCK_STATES: [(i64, &str); 3] = [
    (-1, "inactive"),
    (1, "active_allocated"),
    (0, "active_pending_free"),
];

pub fn trace_table(device: usize) -> String {
    format!("trace_entry_{device}")
}

pub fn block_table(device: usize) -> String {
    format!("block_{device}")
}

pub fn create_trace_table(device: usize) -> String {
    format!(
        "CREATE TABLE trace_entry_{device} (`id` INTEGER PRIMARY KEY, `action` INTEGER, \
         `address` INTEGER, `size` INTEGER, `stream` INTEGER, `allocated` INTEGER, \
         `active` INTEGER, `reserved` INTEGER, `callstackId` INTEGER)"
    )
}

pub fn create_block_table(device: usize) -> String {
    format!(
        "CREATE TABLE block_{device} (`id` INTEGER PRIMARY KEY, `address` INTEGER, \
         `size` INTEGER, `requestedSize` INTEGER, `state` INTEGER DEFAULT 99, \
         `allocEventId` INTEGER, `freeEventId` INTEGER)"
    )
}

/// Indexes of one device's tables; built after the rows, which is much faster.
pub fn create_device_indexes(device: usize) -> String {
    let mut sql = String::new();
    for col in ["allocated", "active", "reserved"] {
        sql += &format!(
            "CREATE INDEX idx_trace_entry_{device}_{col} ON trace_entry_{device} ({col});\n"
        );
    }
    sql + &create_block_indexes(device)
}

/// The indexes of `block_<d>` alone (sharded datasets rename the trace indexes).
pub fn create_block_indexes(device: usize) -> String {
    let mut sql = String::new();
    for col in ["allocEventId", "freeEventId", "size"] {
        let name = block_index_name(device, col);
        sql += &format!("CREATE INDEX {name} ON block_{device} ({col});\n");
    }
    sql
}

/// The name of `block_<device>`'s index on `column`.
pub fn block_index_name(device: usize, column: &str) -> String {
    format!("idx_block_{device}_{column}")
}

/// `trace_entry_<d>` of the v1 layout (import format 1): the callstack text inline instead
/// of a `callstackId`, as the reference's msinsight export (`compatibility-v1`) writes it.
pub fn create_v1_trace_table(device: usize) -> String {
    format!(
        "CREATE TABLE trace_entry_{device} (\"id\" INTEGER PRIMARY KEY,\"action\" INTEGER,\
         \"address\" INTEGER,\"size\" INTEGER,\"stream\" INTEGER,\"allocated\" INTEGER,\
         \"active\" INTEGER,\"reserved\" INTEGER,\"callstack\" TEXT)"
    )
}

/// Indexes of a v1 `trace_entry_<d>` as the msinsight export names them (no `idx_` prefix).
pub fn create_v1_trace_indexes(device: usize) -> String {
    let mut sql = String::new();
    for col in ["allocated", "active", "reserved"] {
        sql +=
            &format!("CREATE INDEX trace_entry_{device}_{col} ON trace_entry_{device} ({col});\n");
    }
    sql
}

pub const CREATE_CALLSTACK_TABLE: &str =
    "CREATE TABLE callstack (`id` INTEGER PRIMARY KEY, `callstack` TEXT)";

pub const CREATE_DICTIONARY_TABLE: &str =
    "CREATE TABLE dictionary (`table` TEXT, `column` TEXT, `key` TEXT, `value` TEXT)";

/// The native dataset extension (spec §10.2): per block lifetime of a shard, its stream and
/// the callstack texts of its allocation and free, wherever in the trace they happened.
pub const CREATE_BLOCK_REFERENCE_TABLE: &str = "CREATE TABLE pt_snap_block_reference \
    (blockId INTEGER PRIMARY KEY, stream INTEGER NOT NULL, allocCallstack TEXT, freeCallstack TEXT)";

pub const CREATE_SHARED_TABLES: &str = "\
CREATE TABLE callstack (`id` INTEGER PRIMARY KEY, `callstack` TEXT);
CREATE TABLE frame (`id` INTEGER PRIMARY KEY, `filename` TEXT NOT NULL, `line` INTEGER NOT NULL, `name` TEXT NOT NULL);
CREATE TABLE callstack_frame (`callstackId` INTEGER NOT NULL, `position` INTEGER NOT NULL, `frameId` INTEGER NOT NULL);
CREATE TABLE callstack_frame_manifest (`callstackId` INTEGER PRIMARY KEY, `frameCount` INTEGER NOT NULL);
CREATE TABLE dictionary (`table` TEXT, `column` TEXT, `key` TEXT, `value` TEXT);
";

pub const CREATE_SHARED_INDEXES: &str =
    "CREATE UNIQUE INDEX idx_callstack_frame_position ON callstack_frame (callstackId, position);\n";

pub const CREATE_METADATA_TABLE: &str = "CREATE TABLE pt_snap_metadata (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        metadata_schema_version INTEGER NOT NULL,
                        import_format_version INTEGER NOT NULL,
                        source_sha256 TEXT NOT NULL,
                        source_size INTEGER NOT NULL,
                        source_name TEXT NOT NULL,
                        requested_device INTEGER,
                        importer_name TEXT NOT NULL,
                        importer_version TEXT NOT NULL,
                        completed_at TEXT NOT NULL
                    )";

/// Our own table (not the reference's format, which readers that don't know it ignore): the
/// events a lenient replay could not reconcile with the allocator state, each with what was
/// done instead (`pt_snap_replay::Issue`). Its presence says the DB was made by a lenient
/// replay; its rows say where the numbers are approximate.
pub const REPLAY_ISSUES_TABLE: &str = "pt_snap_x_replay_issues";
pub const CREATE_REPLAY_ISSUES_TABLE: &str = "CREATE TABLE pt_snap_x_replay_issues (
    device INTEGER NOT NULL,
    event_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
)";

/// Our own table: the `device_free` of each `oom` trace event, which the reference's
/// `trace_entry_<d>` drops (it keeps the event's size and stream). Written only when an
/// imported device has an `oom` event, so a DB without one is the reference's format to the
/// byte; a DB with `oom` events but without this table was made by the reference or an older
/// pt-snap, and its `device_free` is unknown. `device_free` is NULL for an entry without it.
pub const OOM_TABLE: &str = "pt_snap_x_oom";
pub const CREATE_OOM_TABLE: &str = "CREATE TABLE pt_snap_x_oom (
    device INTEGER NOT NULL,
    event_id INTEGER NOT NULL,
    device_free INTEGER
)";

/// Our own table, one per imported device: the `time_us` of each trace entry that has one
/// (epoch microseconds, as PyTorch records them), by the id of its `trace_entry_<d>` row.
/// The reference's `trace_entry_<d>` drops the time. Written for every device our import
/// writes, empty when the trace has no `time_us` (torch_npu, torch before ~2.2), so a
/// device without it keeps no times because the database was made by the reference or by
/// a pt-snap that did not keep them. Entries without a time, and the synthetic events
/// (negative ids), have no row.
pub fn event_time_table(device: usize) -> String {
    format!("pt_snap_x_event_time_{device}")
}

pub fn create_event_time_table(device: usize) -> String {
    format!(
        "CREATE TABLE pt_snap_x_event_time_{device} (event_id INTEGER PRIMARY KEY, \
         time_us INTEGER NOT NULL)"
    )
}

/// A `pt_snap_x_event_time_<d>` table's columns, in table order.
pub const EVENT_TIME_COLUMNS: [&str; 2] = ["event_id", "time_us"];

/// Our own table, one per imported device that has rows for it: the memory pool of trace
/// events, by the id of their `trace_entry_<d>` row. `pool_owner`/`pool_id` are the entry's
/// `pool_id` (pytorch#177717; `(0, 0)` is the default pool) or, for an event that reserved a
/// segment (`segment_alloc`, `segment_map`, the synthetic events of segments from before
/// the trace), that segment's `segment_pool_id` from the dump; `segment_type` (`large` or
/// `small`) is the dump's for such an event's segment. NULL where the file does not say. A
/// database without the table (the reference's, an older pt-snap's, or a file that says
/// nothing of pools) has no pools but those the allocator's sizes imply.
pub fn pool_table(device: usize) -> String {
    format!("pt_snap_x_pool_{device}")
}

pub fn create_pool_table(device: usize) -> String {
    format!(
        "CREATE TABLE pt_snap_x_pool_{device} (event_id INTEGER PRIMARY KEY, \
         segment_type TEXT, pool_owner INTEGER, pool_id INTEGER)"
    )
}

/// A `pt_snap_x_pool_<d>` table's columns, in table order.
pub const POOL_COLUMNS: [&str; 4] = ["event_id", "segment_type", "pool_owner", "pool_id"];

/// Our own table: what `allocator_settings` says about each imported device's trace buffer
/// (pytorch#179276): `overflowed` (1: the ring buffer wrapped, older entries are gone) and
/// `max_entries` (its length), NULL where it does not say. Written only when the file says
/// either for an imported device.
pub const TRACE_BUFFER_TABLE: &str = "pt_snap_x_trace_buffer";
pub const CREATE_TRACE_BUFFER_TABLE: &str = "CREATE TABLE pt_snap_x_trace_buffer (
    device INTEGER PRIMARY KEY,
    overflowed INTEGER,
    max_entries INTEGER
)";
