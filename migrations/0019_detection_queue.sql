-- Profiles stored without passing through the pipeline (imported files,
-- profiles pushed over OTLP or Pyroscope's API) wait here until a pipeline
-- worker has run the detection rules over them, with alerts.
CREATE TABLE detection_queue (
    profile_id UUID PRIMARY KEY REFERENCES profiles (id) ON DELETE CASCADE,
    queued_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX detection_queue_queued ON detection_queue (queued_at);
