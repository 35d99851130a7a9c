-- The event-sourced journal: one stream of events per resize operation.
--
-- `operations` holds one row per stream: who it is about and where the stream ends, so that
-- last_sequence and the operation list never scan `events`. `events` is the log itself,
-- clustered by (operation_id, sequence) so reading a stream is one range scan.
-- Times are unix milliseconds (UTC). `data` is JSON text.
--
-- The schema_migrations table is created by the migrator, not here: it must exist before
-- the first migration can be recorded.

CREATE TABLE operations (
  operation_id  TEXT    NOT NULL PRIMARY KEY CHECK (operation_id <> ''),
  namespace     TEXT    NOT NULL CHECK (namespace <> ''),
  statefulset   TEXT    NOT NULL CHECK (statefulset <> ''),
  first_time    INTEGER NOT NULL,
  last_time     INTEGER NOT NULL,
  last_sequence INTEGER NOT NULL CHECK (last_sequence > 0)
) STRICT;

CREATE TABLE events (
  operation_id TEXT    NOT NULL REFERENCES operations (operation_id),
  sequence     INTEGER NOT NULL CHECK (sequence > 0),
  time         INTEGER NOT NULL,
  type         TEXT    NOT NULL CHECK (type <> ''),
  data         TEXT    NOT NULL,
  PRIMARY KEY (operation_id, sequence)
) STRICT, WITHOUT ROWID;

-- operations(): oldest first; query(): ordered by the operation's first time.
CREATE INDEX operations_by_first_time ON operations (first_time, operation_id);
-- query() by namespace / StatefulSet.
CREATE INDEX operations_by_statefulset ON operations (namespace, statefulset);
-- query() by time window across operations.
CREATE INDEX events_by_time ON events (time);

-- The application checks that a stream grows 1, 2, 3... and the primary key refuses
-- duplicates; this trigger also refuses gaps, whoever the writer is (an older stsresize,
-- a hand-edited file). It costs one primary-key lookup per insert.
CREATE TRIGGER events_sequence_without_gaps
BEFORE INSERT ON events
WHEN NEW.sequence <> 1 + COALESCE(
  (SELECT MAX(sequence) FROM events WHERE operation_id = NEW.operation_id), 0)
BEGIN
  SELECT RAISE(ABORT, 'stsresize: event sequence must follow the last one without a gap');
END;
