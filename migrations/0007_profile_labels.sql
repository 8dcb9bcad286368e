-- Labels on profiles (`{"env": "prod", "version": "1.4.2"}`): set when a
-- profile is requested, filtered on when listing.

alter table profiles add column labels jsonb not null default '{}';
create index profiles_labels on profiles using gin (labels jsonb_path_ops);
