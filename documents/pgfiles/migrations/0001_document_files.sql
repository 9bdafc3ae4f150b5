-- One row per object. The key is COLLATE "C" so that ORDER BY sorts as
-- Go sorts strings (List promises sorted keys) and LIKE 'prefix%' can
-- use the primary key's index.
CREATE TABLE document_files (
    key  text  COLLATE "C" PRIMARY KEY,
    data bytea NOT NULL
);
