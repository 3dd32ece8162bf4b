-- The body filter (a substring of body_fold) through a pg_trgm GIN index; the
-- extension is created by 0003_search.
CREATE INDEX sms_messages_body_trgm ON sms_messages USING gin (body_fold public.gin_trgm_ops);
