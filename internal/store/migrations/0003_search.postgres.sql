-- Substring search (subject_includes, from_addr_includes) through pg_trgm GIN indexes.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE INDEX emails_subject_trgm ON emails USING gin (lower(subject) public.gin_trgm_ops);
CREATE INDEX emails_from_trgm ON emails USING gin (from_addr public.gin_trgm_ops);
