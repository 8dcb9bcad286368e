-- Profiles awaiting detection (0019_detection_queue.sql in Postgres).
CREATE TABLE detection_queue (
    profile_id BINARY(16)  NOT NULL,
    queued_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (profile_id),
    KEY detection_queue_queued (queued_at),
    CONSTRAINT detection_queue_profile_fk FOREIGN KEY (profile_id) REFERENCES profiles (id) ON DELETE CASCADE
) ENGINE=InnoDB;
