-- Email alert channels beside webhooks. An email channel's `url` is its
-- SMTP relay (`smtp://host[:port]`, plain SMTP, port 25 by default) and it
-- has no HMAC secret; it sends from `email_from` to every `email_to`.

alter table alert_channels drop constraint alert_channels_kind_check;
alter table alert_channels add constraint alert_channels_kind_check
    check (kind in ('webhook', 'email'));
alter table alert_channels alter column secret set default '';
alter table alert_channels add column email_from text;
alter table alert_channels add column email_to text[] not null default '{}';
alter table alert_channels add constraint alert_channels_email_addresses
    check (kind <> 'email' or (email_from is not null and cardinality(email_to) > 0));

-- For email attempts `status_code` holds the SMTP reply code (250, 451...)
-- when the server answered.
comment on column alert_attempts.status_code is
    'HTTP status (webhook) or SMTP reply code (email) when the server answered';
