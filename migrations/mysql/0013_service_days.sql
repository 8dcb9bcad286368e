-- Service days (0026_service_days.sql in Postgres).
CREATE TABLE service_days (
    service  VARCHAR(253) NOT NULL,
    `day`    DATETIME(6)  NOT NULL,
    hours    INT          NOT NULL,
    windows  INT          NOT NULL,
    samples  BIGINT       NOT NULL,
    block    LONGBLOB     NOT NULL,
    built_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (service, `day`),
    CONSTRAINT service_days_hours_check CHECK (hours > 0),
    CONSTRAINT service_days_windows_check CHECK (windows >= 0),
    CONSTRAINT service_days_samples_check CHECK (samples >= 0)
) ENGINE=InnoDB;
