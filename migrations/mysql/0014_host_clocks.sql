-- Hosts' clock offsets (0027_host_clocks.sql in Postgres).
CREATE TABLE host_clocks (
    host        VARCHAR(253) NOT NULL,
    offset_ms   BIGINT       NOT NULL,
    measured_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (host)
) ENGINE=InnoDB;
