-- Fault rules of a namespace's SMTP (internal/chaos, docs/api.md "Chaos").
-- One row per namespace that has rules: the list as the API returns it, in
-- JSON. generation changes with every change of the list, so that the
-- every-Nth counters of a replaced list are never added to.
CREATE TABLE chaos_rules (
    namespace_id TEXT PRIMARY KEY REFERENCES namespaces (id),
    generation   BIGINT NOT NULL,
    rules        TEXT NOT NULL,
    updated_at   BIGINT NOT NULL
);

-- The count of matching messages that reached an "every" rule, shared by
-- every connection and replica: one row per rule of the current generation,
-- incremented in one statement (chaos.Store.Count). A change of the list
-- deletes the namespace's rows.
CREATE TABLE chaos_counters (
    namespace_id TEXT NOT NULL,
    generation   BIGINT NOT NULL,
    rule         INTEGER NOT NULL,
    hits         BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, generation, rule)
);

-- The version of all rule lists: every change adds one, in the transaction
-- that makes it. A replica that reads the same version as before knows that
-- its copy of the rules is current (chaos.Table).
CREATE TABLE chaos_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO chaos_version (id, version) VALUES (1, 0);
