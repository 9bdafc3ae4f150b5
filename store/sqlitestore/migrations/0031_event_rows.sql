-- A row of events holds a batch: the events one append stored together,
-- so that a turn writes a row per flush instead of one per event
-- (sqlstore.EventSep). seq is the number of the row's last event, type
-- and data hold the events' types and data joined by newlines, and
-- first_seq is the number of its first; the rows written before hold one
-- event each and keep first_seq NULL, which reads as seq.
ALTER TABLE events ADD COLUMN first_seq INTEGER CHECK (first_seq <= seq);
