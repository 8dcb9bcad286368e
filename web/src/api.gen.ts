// GENERATED FILE, do not edit: `npm run gen:api` (scripts/gen-api.mjs)
// writes it from openapi.json with openapi-typescript. The api-server's
// OpenAPI document is the source; test/api-gen.test.ts fails when this
// file is out of date. Use these types through src/api.ts (`Schemas`).

export interface paths {
    "/api/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The OpenAPI 3 document of this API. */
        get: operations["openapi_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/enroll": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Enroll an agent with an enrollment token: certify the public key it
         *     made as an agent of the token's host. No bearer token: the enrollment
         *     token is the credential, and each enrollment takes one of its uses.
         */
        post: operations["enroll_agent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/enrollment-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Enrollment tokens, newest first, without their secrets (admin). */
        get: operations["list_enrollment_tokens"];
        put?: never;
        /**
         * Create an enrollment token for a host (admin): an agent of that host
         *     started with it enrolls itself. Its secret is answered this once and
         *     kept only as a SHA-256.
         */
        post: operations["create_enrollment_token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/enrollment-tokens/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an enrollment token (admin): no agent enrolls with it from then
         *     on. The identities it enrolled stay valid (revoke them on their own).
         */
        delete: operations["revoke_enrollment_token"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/identities": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Issued agent identities, newest first, revoked ones included (admin). */
        get: operations["list_agent_identities"];
        put?: never;
        /**
         * Issue an agent identity: a certificate binding an Ed25519 key to a host
         *     (admin). Without `public_key` the key pair is generated here and its
         *     private key answered this once.
         */
        post: operations["issue_agent_identity"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/identities/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an agent identity (admin): what it signs is refused from then
         *     on. Revoking it again changes nothing.
         */
        delete: operations["revoke_agent_identity"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/aggregate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A service's flame graph across its hosts and a time range (merged per
         *     host, then across hosts).
         */
        get: operations["aggregate"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/channels": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every channel, by name (admin). */
        get: operations["list_channels"];
        put?: never;
        /** Create a webhook or email channel (admin). */
        post: operations["create_channel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/channels/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One channel (admin). */
        get: operations["describe_channel"];
        put?: never;
        post?: never;
        /** Delete a channel with its deliveries, pending ones included (admin). */
        delete: operations["delete_channel"];
        options?: never;
        head?: never;
        /**
         * Change a channel (admin): enable or disable it, its services, its
         *     address, its webhook secret or its recipients.
         */
        patch: operations["update_channel"];
        trace?: never;
    };
    "/api/v1/channels/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The channel's deliveries, newest first, with every attempt (admin). */
        get: operations["channel_deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/continuous": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every continuous profile, by service. */
        get: operations["list_continuous"];
        put?: never;
        /**
         * Profile a service always (admin): every host that runs it, at a low
         *     rate and within a CPU budget per host.
         */
        post: operations["create_continuous"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/continuous/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A continuous profile. */
        get: operations["describe_continuous"];
        put?: never;
        post?: never;
        /** Delete a continuous profile (admin); its segments stay, as profiles. */
        delete: operations["delete_continuous"];
        options?: never;
        head?: never;
        /**
         * Change a continuous profile's rate, budget, event or hosts, or turn it
         *     off and on (admin); absent fields stay as they are.
         */
        patch: operations["update_continuous"];
        trace?: never;
    };
    "/api/v1/diff": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Compare two profiles, aggregates or runs (or strata of runs), each
         *     normalized by its own total.
         */
        get: operations["diff"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/hosts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The hosts' agents, from their heartbeats. */
        get: operations["list_hosts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/hosts/{host}/deploy": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Deploy an agent to the host: 200 when an agent is live there already,
         *     202 while the deployer runs (follow the request until it ends), 409
         *     when none is configured.
         */
        post: operations["deploy"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/hosts/{host}/undeploy": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make the host's agent exit, at once or once its profiles end. */
        post: operations["undeploy"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Profiles, newest first, filtered and paginated. */
        get: operations["list_profiles"];
        put?: never;
        /** Profile a process on a host: 202 once the command is dispatched. */
        post: operations["start_profile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Import another tool's profile as a finished profile of a service. */
        post: operations["import_profile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One profile and its status. */
        get: operations["describe_profile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}/flamegraph": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A profile's flame graph, optionally narrowed to threads, frames and a
         *     time window.
         */
        get: operations["flame_graph"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}/issues": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The common issues the detection rules found in a profile. */
        get: operations["profile_issues"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stop a profile early; the last partial window is flushed. */
        post: operations["stop_profile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A profile's windows in time order: host, bounds, event and samples. */
        get: operations["timeline"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profiles/{id}/top": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The profile's hottest functions: self and total shares with error
         *     bounds.
         */
        get: operations["top_functions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/requests": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Deploy, undeploy and stop requests, newest first. */
        get: operations["list_requests"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/requests/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One request: who asked, when, and how it went. */
        get: operations["describe_request"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/rules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The detection rules. */
        get: operations["list_rules"];
        put?: never;
        /** Creates a rule and queues its re-analysis of past profiles. */
        post: operations["create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/rules/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One rule and its latest re-analysis. */
        get: operations["describe"];
        /**
         * Replaces a rule (a seed rule becomes the admin's, never reset by the
         *     shipped pack) and queues its re-analysis.
         */
        put: operations["replace"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Changes some of a rule's settings (e.g. `{"enabled": false}`) and
         *     queues its re-analysis.
         */
        patch: operations["change"];
        trace?: never;
    };
    "/api/v1/rules/{id}/reanalysis": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The latest re-analysis of a rule's changes over past profiles. */
        get: operations["latest_reanalysis"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Runs, newest first. */
        get: operations["list_runs"];
        put?: never;
        /**
         * Start a run: one profile per chosen host of a service (profiler of
         *     that service).
         */
        post: operations["create_run"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A run, its members and how far it got. */
        get: operations["describe_run"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/flamegraph": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The run's aggregate (every member, merged per host, then across
         *     hosts) as a flame graph.
         */
        get: operations["run_flame_graph"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/hosts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every chosen host of the run: its labels, samples and hottest
         *     functions, and how far its function mix is from the other hosts' (a
         *     chi-square test against the others pooled, over the run's top
         *     functions); outliers are the hosts below `alpha / hosts`.
         */
        get: operations["run_hosts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/issues": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * What the detection rules found in the run's merged samples once it
         *     ended (one finding, and one alert per channel, for the whole run), with
         *     the hosts where each rule measures most. Empty with `evaluated_at`
         *     null until the pipeline has judged the run.
         */
        get: operations["run_issues"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/precision": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The run's top shares now, each with its standard error, and whether
         *     its stop rule holds.
         */
        get: operations["run_precision"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Stop a run: every member still profiling stops (profiler of its
         *     service).
         */
        post: operations["stop_run"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The windows of every member of the run in time order: host, bounds,
         *     event and samples.
         */
        get: operations["run_timeline"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/top": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The run's hottest functions over every member: self and total shares
         *     with error bounds.
         */
        get: operations["run_top_functions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/schedules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every schedule. */
        get: operations["list_schedules"];
        put?: never;
        /**
         * Create a schedule (admin): of one host's target, or, with `run`, of a
         *     run of a defined service on the hosts chosen each time it fires.
         */
        post: operations["create_schedule"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/schedules/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A schedule with its latest runs. */
        get: operations["describe_schedule"];
        put?: never;
        post?: never;
        /** Delete a schedule (admin). */
        delete: operations["delete_schedule"];
        options?: never;
        head?: never;
        /** Change a schedule (admin); absent fields stay as they are. */
        patch: operations["update_schedule"];
        trace?: never;
    };
    "/api/v1/services": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every service, by name. */
        get: operations["list_services"];
        put?: never;
        /** Define a service (admin). */
        post: operations["create_service"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/services/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A service. */
        get: operations["describe_service"];
        put?: never;
        post?: never;
        /** Delete a service (admin). */
        delete: operations["delete_service"];
        options?: never;
        head?: never;
        /** Change a service (admin); absent fields stay as they are. */
        patch: operations["update_service"];
        trace?: never;
    };
    "/api/v1/services/{name}/hosts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The live hosts running a service, with their labels. */
        get: operations["service_hosts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/services/{name}/trend": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A function's trend over the service's history: per step, its share of
         *     the samples and the cores it keeps busy, each with its standard error.
         */
        get: operations["service_trend"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/triggers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every trigger, by service. */
        get: operations["list_triggers"];
        put?: never;
        /**
         * Profile a service's host when a condition holds there (admin): its
         *     processes' CPU above a threshold, or their memory growing, for a period.
         *     The host's agent watches it and reports; the api-server starts the
         *     profile within the trigger's cooldown and cap.
         */
        post: operations["create_trigger"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/triggers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A trigger, with how often it fired and whether it is held back. */
        get: operations["describe_trigger"];
        put?: never;
        post?: never;
        /** Delete a trigger and its firings (admin); its profiles stay. */
        delete: operations["delete_trigger"];
        options?: never;
        head?: never;
        /**
         * Change a trigger, or turn it off and on (admin); absent fields stay as
         *     they are.
         */
        patch: operations["update_trigger"];
        trace?: never;
    };
    "/api/v1/triggers/{id}/firings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A trigger's latest firings: each host where its condition held, what
         *     the agent measured, and what came of it (a profile started, or held
         *     back by the cooldown or the cap).
         */
        get: operations["trigger_firings"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Whether the database answers. */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ingest": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Take a profile in Pyroscope's ingest API.
         * @description What Pyroscope's older SDKs (`pyroscope-io` 0.8), its Java agent and
         *     Grafana Alloy's legacy components send: a profile of a service, stored
         *     once however often it is sent, as one ODP profile per event it
         *     measures, labelled `source=pyroscope`.
         */
        post: operations["pyroscope_ingest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics of the api-server (see docs/operations.md, Metrics). */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/push.v1.PusherService/Push": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Take profiles in Pyroscope's push API.
         * @description What Pyroscope's SDKs of today and Grafana Alloy's `pyroscope.write`
         *     send: a Connect unary call whose `push.v1.PushRequest` holds series of
         *     labels (`service_name` names the ODP service), each with pprof
         *     profiles. Every profile is stored once however often it is sent,
         *     labelled `source=pyroscope`; one that cannot be stored does not stop
         *     the others, and the answer then names each one refused.
         */
        post: operations["pyroscope_push"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1development/profiles": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Take OpenTelemetry profiles over OTLP/HTTP.
         * @description What the OpenTelemetry eBPF profiler, a Collector's `otlp_http`
         *     exporter or any OTLP exporter sends (signal `v1development`). Each
         *     profile is stored once however often it is sent, labelled
         *     `source=otlp`; a profile that cannot be kept is refused alone and
         *     counted in `partial_success`. The same port also takes OTLP/gRPC over
         *     HTTP/2, which is no HTTP/JSON operation: the method
         *     `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`,
         *     with the same token, answering in gRPC statuses.
         */
        post: operations["export_otlp_profiles"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description `GET /api/v1/agents/identities`: newest first. */
        AgentIdentityList: {
            identities: components["schemas"]["AgentIdentityRecord"][];
        };
        /** @description An issued identity as kept: no certificate, no private key. */
        AgentIdentityRecord: {
            /**
             * Format: uuid
             * @description The enrollment token the agent traded for it, when it enrolled
             *     itself with one (`issued_by` is then the token's creator).
             */
            enrollment_token?: string | null;
            /** Format: date-time */
            expires_at: string;
            host: string;
            /** Format: uuid */
            id: string;
            /** Format: date-time */
            issued_at: string;
            /**
             * @description The admin who issued it, or `deployer:local` / `deployer:ssh` for
             *     an agent the api-server deployed.
             */
            issued_by: string;
            /** @description The agent's public key, base64url of its 32 raw bytes. */
            public_key: string;
            /**
             * Format: date-time
             * @description When it was revoked; what it signs is refused from then on.
             */
            revoked_at?: string | null;
            revoked_by?: string | null;
        };
        /** @description An agent as its latest heartbeat describes it. */
        AgentView: {
            agent_id: string;
            /**
             * @description Whether that offset is large enough that the host's times are
             *     corrected by it (10 s, a window, or more either way).
             */
            clock_corrected?: boolean;
            /**
             * Format: int64
             * @description How far ahead of the api-server the host's clock runs, in ms
             *     (negative: behind), as measured from its heartbeats; absent until
             *     measured, and on the rows of agents no longer live. From 10 s either way, the pipeline moves the host's
             *     windows by it, so its samples are placed when they happened.
             */
            clock_offset_ms?: number | null;
            host: string;
            /** Format: date-time */
            last_seen: string;
            /** @description Heard from recently enough to take commands. */
            live: boolean;
            plugins: string[];
            running_profiles: string[];
            version: string;
        };
        /**
         * @description The aggregate's JSON answers: the merged tree (`format=json`) or a
         *     speedscope file.
         */
        AggregateBody: components["schemas"]["AggregateJson"] | components["schemas"]["SpeedscopeFile"];
        /** @description A service's flame graph across its hosts and a time range. */
        AggregateJson: components["schemas"]["SampleUnit"] & {
            /**
             * @description What the windows' targets earned, what was captured, and what was
             *     lost and why (before thread and stack filters).
             */
            coverage?: components["schemas"]["SampleCoverage"];
            event?: null | components["schemas"]["EventKind"];
            hosts: components["schemas"]["HostSummary"][];
            /** Format: int64 */
            profiles: number;
            root: components["schemas"]["FlameNode"];
            /** Format: int64 */
            samples: number;
            service: string;
            /** Format: date-time */
            since: string;
            /** Format: int64 */
            snapshots: number;
            /** Format: date-time */
            until: string;
        };
        /**
         * Format: binary
         * @description A protocol buffers message or a profile file, as sent: any bytes.
         */
        BinaryBody: string;
        /** @description A channel as the API shows it: everything but the webhook's secret. */
        Channel: {
            /** Format: date-time */
            created_at: string;
            enabled: boolean;
            from?: string | null;
            /** Format: uuid */
            id: string;
            kind: components["schemas"]["ChannelKind"];
            name: string;
            service_pattern: string;
            /** @description The email channel's relay; `null` for webhooks. */
            smtp_url?: string | null;
            to: string[];
            /** @description The webhook's URL; `null` for email. */
            url?: string | null;
        };
        /**
         * @description How a channel sends its alerts.
         * @enum {string}
         */
        ChannelKind: "webhook" | "email";
        ChannelList: {
            channels: components["schemas"]["Channel"][];
        };
        /**
         * @description An error as the Connect protocol spells it (Pyroscope's push API is a
         *     Connect call), which the Pyroscope SDKs log.
         */
        ConnectError: {
            /**
             * @description `invalid_argument`, `unauthenticated`, `permission_denied`,
             *     `resource_exhausted` or `unavailable`.
             */
            code: string;
            message: string;
        };
        /**
         * @description A service's continuous profile. Each host profiles it in hourly
         *     segments, each an ordinary profile labelled `continuous=<id>`.
         */
        ContinuousProfile: {
            /** Format: double */
            cpu_budget_percent: number;
            /** Format: date-time */
            created_at: string;
            created_by: string;
            enabled: boolean;
            event: components["schemas"]["EventKind"];
            /** Format: int32 */
            frequency_hz: number;
            /** @description The hosts that profile it; absent: every host that runs the service. */
            hosts?: string[] | null;
            /** Format: uuid */
            id: string;
            /**
             * Format: int64
             * @description Seconds of one segment (one profile per host).
             */
            segment_secs: number;
            service: string;
            /** Format: date-time */
            updated_at: string;
            updated_by: string;
        };
        /** @description `GET /api/v1/continuous`. */
        ContinuousProfilesResponse: {
            continuous: components["schemas"]["ContinuousProfile"][];
        };
        /** @description A deploy, undeploy or stop request and how it went. */
        ControlRequest: {
            /** Format: uuid */
            command_id?: string | null;
            /** Format: date-time */
            created_at: string;
            host: string;
            /** Format: uuid */
            id: string;
            kind: components["schemas"]["RequestKind"];
            mode?: null | components["schemas"]["UndeployMode"];
            /** Format: uuid */
            profile_id?: string | null;
            requested_by: string;
            status: components["schemas"]["RequestStatus"];
            status_reason?: string | null;
            /** Format: date-time */
            updated_at: string;
        };
        /**
         * @description `POST /api/v1/channels`: a webhook or an email channel, told apart by
         *     `kind`.
         */
        CreateChannelRequest: components["schemas"]["CreateWebhookRequest"] | components["schemas"]["CreateEmailRequest"];
        /**
         * @description `POST /api/v1/continuous`: profile a defined service always. Absent
         *     fields take the defaults: `cpu-clock` at 19 Hz, 0.5 % of one core per
         *     host, every host that runs the service.
         */
        CreateContinuousRequest: {
            /**
             * Format: double
             * @description CPU each host's agent may spend on it, in percent of one core; the
             *     rate is lowered to stay inside it.
             */
            cpu_budget_percent?: number | null;
            event?: null | components["schemas"]["EventKind"];
            /** Format: int32 */
            frequency_hz?: number | null;
            /** @description Only these hosts profile it; absent: every host that runs it. */
            hosts?: string[] | null;
            /** @description A defined service (`POST /api/v1/services`). */
            service: string;
        };
        /** @description An email channel: alerts mailed as plain text through an SMTP relay. */
        CreateEmailRequest: {
            enabled?: boolean;
            /** @description The sender's address, `local@domain`. */
            from: string;
            /** @description Always `email`: the body names its kind. */
            kind: components["schemas"]["EmailKind"];
            /** @description Unique among channels. */
            name: string;
            /**
             * @description Glob over the services whose alerts go here (`*` any run of
             *     characters, `?` one); all services when absent.
             */
            service_pattern?: string;
            /** @description The relay, `smtp://host[:port]` (port 25 by default). */
            smtp_url: string;
            /** @description The recipients' addresses, `local@domain`. */
            to: string[];
        };
        /**
         * @description `POST /api/v1/agents/enrollment-tokens`: a token that lets an agent of
         *     `host` enroll itself (`POST /api/v1/agents/enroll`) `uses` times
         *     before it expires.
         */
        CreateEnrollmentTokenRequest: {
            /**
             * Format: int64
             * @description Seconds until it expires: 60 to 604800 (a week); 3600 when absent.
             */
            expires_in_secs?: number | null;
            /** @description The host id the enrolling agent must run as (its `--host-id`). */
            host: string;
            /**
             * Format: int32
             * @description How many agents may enroll with it: 1 to 1000; 1 when absent.
             */
            uses?: number | null;
        };
        /** @description `POST /api/v1/runs`. */
        CreateRunRequest: {
            /**
             * Format: int64
             * @description The longest each member profiles.
             */
            duration_secs: number;
            /** Format: int32 */
            frequency_hz?: number | null;
            /**
             * @description Which of the live hosts running the service: `"all"` (default),
             *     `{"count": K}` or `{"percent": P}`, uniformly without replacement.
             */
            hosts?: components["schemas"]["HostSelection"];
            options?: null | components["schemas"]["ProfileOptions"];
            /**
             * Format: int64
             * @description The same seed and hosts choose the same hosts; random when absent
             *     (the run records the one it used).
             */
            seed?: number | null;
            /** @description A defined service (`POST /api/v1/services`). */
            service: string;
            stop_when?: null | components["schemas"]["StopRule"];
            /**
             * @description Host labels to stratify by (`["zone"]`): hosts are allocated to
             *     each combination in proportion, at least one each when K allows.
             */
            stratify_by?: string[];
            /** @description Refuse (422) rather than take every host when K exceeds them. */
            strict?: boolean;
            /** Format: int64 */
            window_secs?: number | null;
        };
        /**
         * @description `POST /api/v1/schedules` with `run`: a schedule that starts a run of a
         *     defined service each time it fires, on the hosts chosen then.
         */
        CreateRunScheduleRequest: {
            /** @description As for a host schedule. */
            cron: string;
            /**
             * Format: int64
             * @description The longest each member profiles.
             */
            duration_secs: number;
            enabled?: boolean;
            /** Format: int32 */
            frequency_hz?: number | null;
            name: string;
            options?: null | components["schemas"]["ProfileOptions"];
            run: components["schemas"]["ScheduleRun"];
            /** @description A defined service (`POST /api/v1/services`). */
            service: string;
            timezone?: string;
            /** Format: int64 */
            window_secs?: number | null;
        };
        /**
         * @description `POST /api/v1/schedules`: the target as for a start (one of `pid`,
         *     `process_name`, `cmdline` or `cgroup`), and when to profile it.
         */
        CreateScheduleRequest: {
            /** @description A cgroup path or container id (see the start request). */
            cgroup?: string | null;
            /** @description A regex over the full command line (see the start request). */
            cmdline?: string | null;
            /**
             * @description Five fields (minute hour day-of-month month day-of-week), or six
             *     with seconds first.
             */
            cron: string;
            /** Format: int64 */
            duration_secs: number;
            enabled?: boolean;
            /** Format: int32 */
            frequency_hz?: number | null;
            host: string;
            name: string;
            options?: null | components["schemas"]["ProfileOptions"];
            /** Format: int32 */
            pid?: number | null;
            process_name?: string | null;
            service?: string | null;
            /** @description An IANA time zone the cron expression is read in; UTC when absent. */
            timezone?: string;
            /** Format: int64 */
            window_secs?: number | null;
        };
        /**
         * @description `POST /api/v1/services`: a name and exactly one of `process_name`,
         *     `cmdline` or `cgroup` (a pid names a process on one host, not a
         *     service).
         */
        CreateServiceRequest: {
            /** @description A cgroup path or container id (see the start request). */
            cgroup?: string | null;
            /** @description A regex over the full command line (see the start request). */
            cmdline?: string | null;
            description?: string | null;
            name: string;
            owner_team?: string | null;
            process_name?: string | null;
        };
        /**
         * @description `POST /api/v1/triggers`. Absent fields take the defaults: a 30 s
         *     `cpu-clock` profile at 99 Hz, a cooldown of 10 minutes per host, at most
         *     3 triggered profiles of it running at once across the fleet, on every
         *     host that runs the service.
         */
        CreateTriggerRequest: {
            /**
             * @description What must hold on a host, for how long: `{"kind": "cpu_above",
             *     "percent": 80, "for_secs": 30}` (percent of one core, summed over
             *     the service's processes) or `{"kind": "rss_growth", "mib_per_min":
             *     50, "for_secs": 120}`.
             */
            condition: components["schemas"]["TriggerCondition"];
            /**
             * Format: int32
             * @description After a firing on a host, the trigger does not fire there again for
             *     this long.
             */
            cooldown_secs?: number | null;
            /**
             * Format: int64
             * @description How long each triggered profile runs.
             */
            duration_secs?: number | null;
            event?: null | components["schemas"]["EventKind"];
            /** Format: int32 */
            frequency_hz?: number | null;
            /** @description Only these hosts watch it; absent: every host that runs the service. */
            hosts?: string[] | null;
            /**
             * Format: int32
             * @description Most profiles of this trigger running at once, across the fleet.
             */
            max_concurrent?: number | null;
            /** @description A defined service (`POST /api/v1/services`). */
            service: string;
        };
        /** @description A webhook: alerts POSTed as JSON, signed with `secret`. */
        CreateWebhookRequest: {
            enabled?: boolean;
            /** @description Always `webhook`: the body names its kind. */
            kind: components["schemas"]["WebhookKind"];
            /** @description Unique among channels. */
            name: string;
            /** @description The HMAC-SHA256 key of `X-ODP-Signature`. Never returned. */
            secret: string;
            /**
             * @description Glob over the services whose alerts go here (`*` any run of
             *     characters, `?` one); all services when absent.
             */
            service_pattern?: string;
            /** @description The http(s) URL alerts are POSTed to; no credentials in it. */
            url: string;
        };
        /**
         * @description A token just created, with its secret: shown this once, kept only as
         *     a SHA-256.
         */
        CreatedEnrollmentToken: {
            /**
             * @description What the agent is started with (`--enrollment-token`,
             *     `ODP_ENROLLMENT_TOKEN`).
             */
            secret: string;
            token: components["schemas"]["EnrollmentToken"];
        };
        /** @description A page of deliveries, newest first. */
        DeliveriesPage: {
            deliveries: components["schemas"]["Delivery"][];
            /**
             * Format: uuid
             * @description Pass as `before` for the next page; `null` on the last page.
             */
            next_before?: string | null;
        };
        /** @description One alert to a channel and how sending it went. */
        Delivery: {
            /** @description Every attempt, first first. */
            attempt_log: components["schemas"]["DeliveryAttempt"][];
            /** Format: int32 */
            attempts: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            detected_at: string;
            /** Format: date-time */
            finished_at?: string | null;
            host: string;
            /** Format: uuid */
            id: string;
            /**
             * Format: date-time
             * @description When a pending delivery is next tried; `null` once it ended.
             */
            next_attempt_at?: string | null;
            /** Format: uuid */
            profile_id: string;
            rule_id: string;
            rule_title: string;
            service: string;
            /**
             * Format: double
             * @description Matched samples, percent of the profile's samples.
             */
            share: number;
            status: components["schemas"]["DeliveryStatus"];
            /** Format: double */
            threshold_pct: number;
        };
        /** @description One try at sending a delivery. */
        DeliveryAttempt: {
            /** Format: int32 */
            attempt: number;
            /** Format: date-time */
            attempted_at: string;
            /** @description Why it failed, when it did. */
            error?: string | null;
            /**
             * Format: int32
             * @description The HTTP status (webhook) or SMTP reply code (email), when the
             *     server answered.
             */
            status_code?: number | null;
            success: boolean;
        };
        /**
         * @description Where a delivery stands.
         * @enum {string}
         */
        DeliveryStatus: "pending" | "delivered" | "failed";
        DeployResponse: {
            links: components["schemas"]["RequestLinks"];
            request: components["schemas"]["ControlRequest"];
        };
        /** @description Two profiles or aggregates compared, each normalized by its own total. */
        DiffJson: {
            baseline: components["schemas"]["SideSummary"];
            /** @description Largest total-share changes first. */
            changes: components["schemas"]["FunctionChange"][];
            root: components["schemas"]["DiffNode"];
            target: components["schemas"]["SideSummary"];
        };
        DiffNode: {
            /** Format: int64 */
            baseline_self: number;
            /**
             * Format: double
             * @description `baseline_total` over the baseline's total samples.
             */
            baseline_share: number;
            /** Format: int64 */
            baseline_total: number;
            /** @description Sorted by name. */
            children: components["schemas"]["DiffNode"][];
            name: string;
            /** Format: int64 */
            target_self: number;
            /**
             * Format: double
             * @description `target_total` over the target's total samples.
             */
            target_share: number;
            /** Format: int64 */
            target_total: number;
        };
        /** @description A refused start: the target already has a live profile of this mode. */
        DuplicateStart: {
            error: components["schemas"]["ErrorDetail"];
            /** @description The live profile. */
            profile: components["schemas"]["Profile"];
        };
        /** @description Profile for `on_ms` at the start of every `period_ms`. */
        DutyCycle: {
            /** Format: int64 */
            on_ms: number;
            /** Format: int64 */
            period_ms: number;
        };
        DutyCycleOptions: {
            /** Format: int64 */
            on_secs: number;
            /** Format: int64 */
            period_secs: number;
        };
        /**
         * @description The `kind` of an email channel's create request.
         * @enum {string}
         */
        EmailKind: "email";
        /**
         * @description `POST /api/v1/agents/enroll`: an agent trades a token and the public
         *     half of the key it made for a certificate of `host`. Answered with
         *     an [`IssuedAgentIdentity`] (no private key: the agent has it).
         */
        EnrollAgentRequest: {
            /** @description The agent's host id; the token's host. */
            host: string;
            /**
             * @description The agent's Ed25519 public key: base64url of its 32 raw bytes, or an
             *     SPKI PEM.
             */
            public_key: string;
            /** @description The enrollment token's secret. */
            token: string;
        };
        /** @description An enrollment token as kept: never its secret. */
        EnrollmentToken: {
            /** Format: date-time */
            created_at: string;
            created_by: string;
            /** Format: date-time */
            expires_at: string;
            host: string;
            /** Format: uuid */
            id: string;
            /** @description The identities enrolled with it, oldest first. */
            identities: string[];
            /** Format: date-time */
            revoked_at?: string | null;
            revoked_by?: string | null;
            state: components["schemas"]["EnrollmentTokenState"];
            /** Format: int32 */
            used: number;
            /**
             * Format: int32
             * @description How many agents may enroll with it, and how many did.
             */
            uses: number;
        };
        /** @description `GET /api/v1/agents/enrollment-tokens`: newest first. */
        EnrollmentTokenList: {
            tokens: components["schemas"]["EnrollmentToken"][];
        };
        /**
         * @description Where a token stands.
         * @enum {string}
         */
        EnrollmentTokenState: "unused" | "used" | "expired" | "revoked";
        /**
         * @description Every error: `{"error": {"code", "message"}}`. A refused duplicate
         *     start also carries the live `profile`.
         */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        /**
         * @description The error's kind; the HTTP status says the same.
         * @enum {string}
         */
        ErrorCode: "bad_request" | "unauthorized" | "forbidden" | "not_found" | "conflict" | "invalid" | "too_large" | "unavailable" | "internal";
        ErrorDetail: {
            code: components["schemas"]["ErrorCode"];
            /** @description What was wrong, for people. */
            message: string;
        };
        /**
         * @description What one sample measures, so that counts of different units are never
         *     added together.
         * @enum {string}
         */
        EventKind: "cycles" | "cpu-clock" | "wall" | "off-cpu" | "lock" | "alloc-bytes" | "heap-bytes";
        Executable: {
            /** @description The GNU build id note, lowercase hex; absent when the binary has none. */
            build_id?: string | null;
            path: string;
        };
        /** @description Atys' Algorithm 1; absent fields take the defaults shown. */
        FdaOptions: {
            /**
             * @description False turns FDA off even where the agent enables it by default.
             * @default true
             */
            enabled: boolean | null;
            /**
             * Format: double
             * @description In (0, 1): up to f/λ on a change, down to f·λ when stable.
             * @default 0.8
             */
            lambda: number | null;
            /**
             * Format: int32
             * @description The requested frequency when absent.
             */
            max_hz?: number | null;
            /**
             * Format: int32
             * @default 19
             */
            min_hz: number | null;
            /**
             * Format: int32
             * @description Stable windows before the frequency is lowered.
             * @default 5
             */
            stable_windows: number | null;
            /**
             * Format: double
             * @description Jensen-Shannon divergence in (0, 1] above which hot spots changed.
             * @default 0.05
             */
            theta: number | null;
            /**
             * Format: int32
             * @description Hottest functions compared.
             * @default 10
             */
            top_n: number | null;
        };
        /**
         * @description Frequency dynamic adjustment (Atys, Algorithm 1). Absent fields take
         *     the defaults below.
         */
        FdaSettings: {
            /**
             * @description False turns FDA off for this profile even when the agent's default
             *     is on.
             * @default true
             */
            enabled: boolean;
            /**
             * Format: double
             * @description Decay factor in (0, 1): up to f/λ on a change, down to f·λ when
             *     stable.
             * @default 0.8
             */
            lambda: number;
            /**
             * Format: int32
             * @description Highest frequency; the requested one when absent.
             * @default null
             */
            max_hz: number | null;
            /**
             * Format: int32
             * @default 19
             */
            min_hz: number;
            /**
             * Format: int32
             * @description Consecutive stable windows before the frequency is lowered.
             * @default 5
             */
            stable_windows: number;
            /**
             * Format: double
             * @description Jensen-Shannon divergence (bits, in [0, 1]) above which hot spots
             *     count as changed.
             * @default 0.05
             */
            theta: number;
            /**
             * Format: int32
             * @description How many of the hottest leaf functions are compared.
             * @default 10
             */
            top_n: number;
        };
        /**
         * @description What became of a firing.
         * @enum {string}
         */
        FiringOutcome: "started" | "cooldown" | "capped" | "busy" | "failed";
        /**
         * @description The flame graph's JSON answers: the tree (`format=json`) or a
         *     speedscope file.
         */
        FlameGraphBody: components["schemas"]["FlameGraphJson"] | components["schemas"]["SpeedscopeFile"];
        /** @description A profile's flame graph tree (`format=json`). */
        FlameGraphJson: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            /** Format: uuid */
            profile_id: string;
            root: components["schemas"]["FlameNode"];
            /** Format: int64 */
            samples: number;
            /** Format: int64 */
            snapshots: number;
        };
        FlameNode: {
            /** @description Sorted by name, as flame graphs draw them. */
            children: components["schemas"]["FlameNode"][];
            /**
             * @description The source file of the node's code, when its frames name one
             *     (py-spy's Python frames, imported profiles with lines): what "view
             *     source" opens. A node merges a function's frames of every line;
             *     `odp-profile` says which file and line it names.
             */
            file?: string | null;
            /**
             * Format: int32
             * @description The line in `file` (see there), when known.
             */
            line?: number | null;
            /**
             * Format: int32
             * @description For an `other` node that stands for children cut by a node budget:
             *     how many it stands for (0 for every real node).
             */
            merged?: number;
            name: string;
            /**
             * Format: int64
             * @description Samples where this node was the leaf.
             */
            self_count: number;
            /**
             * Format: int64
             * @description Samples in this node and everything it called.
             */
            total: number;
        };
        /** @description How one function's share moved between baseline and target. */
        FunctionChange: {
            /** Format: double */
            baseline_self_share: number;
            /** Format: double */
            baseline_total_share: number;
            /**
             * Format: double
             * @description `target_self_share - baseline_self_share`, in percentage points.
             */
            delta_self_points: number;
            /**
             * Format: double
             * @description `target_total_share - baseline_total_share`, in percentage points.
             */
            delta_total_points: number;
            /**
             * Format: double
             * @description One standard error of `delta_total_points`, in points: each side's
             *     share is a binomial proportion over its samples, and the sides are
             *     independent. Null when a side has no samples (or from a server
             *     before it was reported).
             */
            delta_total_stderr_points?: number | null;
            function: string;
            /**
             * @description Whether the change spans at least [`SIGNIFICANT_Z`] standard errors
             *     (any change of a share known exactly, 0 or 100% on both sides).
             */
            significant?: boolean;
            /** Format: double */
            target_self_share: number;
            /** Format: double */
            target_total_share: number;
        };
        /**
         * @description The function whose self share differs most between a host and the
         *     others.
         */
        FunctionMove: {
            function: string;
            /**
             * Format: double
             * @description Its self share on the host.
             */
            host_share: number;
            /**
             * Format: double
             * @description Its self share on the other hosts pooled.
             */
            others_share: number;
        };
        FunctionShare: {
            function: string;
            /**
             * Format: int64
             * @description Samples where the function was the leaf.
             */
            self_samples: number;
            /** Format: double */
            self_share: number;
            /**
             * Format: double
             * @description One binomial standard error of `self_share`.
             */
            self_share_stderr: number;
            /**
             * Format: int64
             * @description Samples where the function was anywhere on the stack (once per
             *     stack, however deep the recursion).
             */
            total_samples: number;
            /** Format: double */
            total_share: number;
        };
        /** @description One of a host's hottest functions. */
        HostFunction: {
            function: string;
            /** Format: int64 */
            self_samples: number;
            /**
             * Format: double
             * @description Of the host's samples.
             */
            self_share: number;
        };
        /**
         * @description How many of the live hosts a run takes. In JSON: `"all"`,
         *     `{"count": K}` or `{"percent": P}`.
         */
        HostSelection: "all" | {
            /**
             * Format: int32
             * @description `K` hosts, at least 1.
             */
            count: number;
        } | {
            /**
             * Format: double
             * @description `ceil(P% of the live hosts)`, with `P` in (0, 100].
             */
            percent: number;
        };
        /** @description One host's part of an aggregate. */
        HostSummary: {
            host: string;
            /** Format: int64 */
            profiles: number;
            /** Format: int64 */
            samples: number;
            /** Format: int64 */
            snapshots: number;
        };
        HostsResponse: {
            agents: components["schemas"]["AgentView"][];
        };
        /**
         * @description The multipart form of `/ingest`: the Pyroscope SDKs' (`profile`, with
         *     `format=pprof`) or the Java agent's (`jfr`, with `format=jfr`).
         */
        IngestForm: {
            /**
             * Format: binary
             * @description A JFR recording.
             */
            jfr?: string;
            /**
             * Format: binary
             * @description The recording's per-context labels, which ODP's stacks do not
             *     carry: ignored.
             */
            labels?: string;
            /**
             * Format: binary
             * @description The cumulative profile a delta was taken from: not needed, as the
             *     SDKs send deltas, and ignored.
             */
            previous_profile?: string;
            /**
             * Format: binary
             * @description A pprof profile, gzip-compressed or not.
             */
            profile?: string;
            /**
             * Format: binary
             * @description Ignored: the sample types name their units.
             */
            sample_type_config?: string;
        };
        /** @description What Pyroscope's `/ingest` stored. */
        IngestedProfiles: {
            /**
             * @description The profiles stored, one per event the body measures (the same
             *     ones again for a retry); none for a body without samples.
             */
            profiles: string[];
        };
        /** @description A detection with its rule's text. */
        Issue: {
            /**
             * @description What the rule kind found beyond the share: for `share_regression`,
             *     `{runs_compared, functions: [{function, share_pct, baseline_pct,
             *     growth_points}], new_rules}`; `null` for the others.
             */
            detail: Record<string, unknown> | null;
            explanation: string;
            /** Format: date-time */
            first_evaluated_at: string;
            fix: string;
            kind: string;
            /** Format: date-time */
            last_evaluated_at: string;
            link: string;
            rule_id: string;
            /** Format: int64 */
            samples_matched: number;
            /** Format: int64 */
            samples_total: number;
            /** Format: double */
            share: number;
            stacks: components["schemas"]["IssueStack"][];
            /** Format: double */
            threshold_pct: number;
            title: string;
        };
        /**
         * @description `POST /api/v1/agents/identities`: certify a key as an agent of `host`.
         *     Without `public_key` the API generates the key pair and answers its
         *     private key once (it keeps no copy); with one, the private key never
         *     leaves the agent's machine (what `odpctl agents enroll` does).
         */
        IssueAgentIdentityRequest: {
            host: string;
            /**
             * @description The agent's Ed25519 public key: base64url (or base64) of its 32 raw
             *     bytes, or an SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
             */
            public_key?: string | null;
            /**
             * Format: int64
             * @description How long the certificate is valid, in days; 365 when absent.
             */
            valid_days?: number | null;
        };
        /** @description A stack matching a detection rule, frames root first. */
        IssueStack: {
            /** Format: int64 */
            count: number;
            frames: string[];
            /** Format: uuid */
            stack_id: string;
        };
        /**
         * @description An identity just issued: the certificate to give the agent, and the
         *     private key when the API generated it.
         */
        IssuedAgentIdentity: {
            /**
             * @description The certificate: a JWT signed with the api-server's command key.
             *     The agent reads it from `agent-certificate.jwt` or
             *     `ODP_AGENT_CERTIFICATE`.
             */
            certificate: string;
            /** Format: date-time */
            expires_at: string;
            host: string;
            /**
             * Format: uuid
             * @description The certificate's id (its `jti`), which revocation names.
             */
            id: string;
            /** Format: date-time */
            issued_at: string;
            issued_by: string;
            /**
             * @description The agent's private key (PKCS#8 PEM), only when the request gave no
             *     public key: shown this once and never stored.
             */
            private_key_pem?: string | null;
            /** @description The agent's public key, base64url of its 32 raw bytes. */
            public_key: string;
        };
        IssuesResponse: {
            /**
             * @description Detections, largest share first, each with its rule's title,
             *     explanation, fix and link and its heaviest matching stacks.
             */
            issues: components["schemas"]["Issue"][];
            /** Format: uuid */
            profile_id: string;
        };
        /**
         * @description The runtime a target process runs, which decides the agent plugin that
         *     samples it (`native` perf_event, `python` py-spy, `jvm` JFR).
         * @enum {string}
         */
        Language: "native" | "python" | "jvm";
        Library: {
            kind: components["schemas"]["LibraryKind"];
            /**
             * @description `log4j-core`, `requests`, `libssl`: the artifact, distribution or
             *     shared object name without version or extension.
             */
            name: string;
            /** @description `2.14.1`, `1.1.1w`; absent when the agent could not tell. */
            version?: string | null;
        };
        /** @enum {string} */
        LibraryKind: "jar" | "python" | "shared";
        /** @description Samples the target earned that are not in the profile, by why. */
        LostSamples: {
            /**
             * Format: int64
             * @description The sampler lost them: the kernel's ring buffer was full, or py-spy
             *     failed to read a Python stack.
             */
            overflow: number;
            /**
             * Format: int64
             * @description Cost control had sampling paused (its duty cycle).
             */
            paused: number;
            /**
             * Format: int64
             * @description The kernel throttled the sampling event.
             */
            throttled: number;
            /**
             * Format: int64
             * @description Sampled, but dropped on the way (the agent's spool was full).
             */
            transport: number;
            /**
             * Format: int64
             * @description The process ran before the agent found it.
             */
            undiscovered: number;
        };
        /**
         * @description `POST /api/v1/schedules`: a schedule of one host's target, or, with
         *     `run`, of a run of a service.
         */
        NewScheduleRequest: components["schemas"]["CreateRunScheduleRequest"] | components["schemas"]["CreateScheduleRequest"];
        /**
         * @description An OTLP `ExportProfilesServiceRequest` (`opentelemetry-proto` 1.10,
         *     `profiles/v1development`) in OTLP/JSON: keys in lowerCamelCase (others
         *     are ignored as unknown fields), absent fields at their default, 64-bit
         *     integers as strings or numbers, trace, span and profile ids in hex,
         *     other bytes in base64. docs/ingest.md says what ODP makes of it.
         */
        OtlpExportRequest: {
            /**
             * @description The `ProfilesDictionary` the request's profiles index: strings,
             *     mappings, locations, functions, links, attributes and stacks,
             *     each table's entry 0 the zero value.
             */
            dictionary?: unknown;
            /**
             * @description `ResourceProfiles`: a resource (its `service.name` attribute names
             *     the ODP service, `host.name` the host), and its scopes' profiles.
             */
            resourceProfiles?: unknown[];
        };
        /**
         * @description An OTLP `ExportProfilesServiceResponse` in OTLP/JSON: empty when every
         *     profile was stored as sent.
         */
        OtlpExportResponse: {
            partialSuccess?: null | components["schemas"]["OtlpPartialSuccess"];
        };
        /**
         * @description `ExportProfilesPartialSuccess`: the profiles refused and why, and what
         *     was kept but changed.
         */
        OtlpPartialSuccess: {
            /**
             * @description Each refused profile by its place in the request and why, then
             *     what was kept but changed (attributes dropped, traces past the
             *     bound), `; `-separated.
             */
            errorMessage: string;
            /**
             * @description How many of the request's profiles were refused (and not stored
             *     in part), an int64 as a string as proto3's JSON mapping writes it.
             * @example 1
             */
            rejectedProfiles: string;
        };
        /**
         * @description A `google.rpc.Status`, OTLP/HTTP's error body, in the request's
         *     encoding: protocol buffers, or JSON as here.
         */
        OtlpStatus: {
            /**
             * Format: int32
             * @description The gRPC status code: 3 invalid argument, 7 permission denied, 8
             *     resource exhausted, 14 unavailable, 16 unauthenticated.
             */
            code: number;
            message: string;
        };
        /** @description How hosts are compared. */
        OutlierOptions: {
            /**
             * Format: double
             * @description Family-wise false-positive rate: a host is flagged when its p-value
             *     is below `alpha / hosts`.
             */
            alpha: number;
            /**
             * @description The run's top functions (by self samples) compared one by one; the
             *     others are one category.
             */
            top_k: number;
        };
        /** @description A profile as the API shows it. */
        Profile: {
            agent_id?: string | null;
            coverage?: null | components["schemas"]["SampleCoverage"];
            /** Format: date-time */
            created_at: string;
            /** Format: int64 */
            duration_ms: number;
            event?: null | components["schemas"]["EventKind"];
            /** Format: date-time */
            finished_at?: string | null;
            /** Format: int32 */
            frequency_hz: number;
            host: string;
            /** Format: uuid */
            id: string;
            labels: {
                [key: string]: string;
            };
            links: components["schemas"]["ProfileLinks"];
            /** @description One live profile per mode and target. */
            mode: components["schemas"]["ProfileMode"];
            /**
             * @description The plugin, event and cost control the start asked for (the start
             *     request's `options`, as the agent received them); `{}` for the
             *     agent's defaults.
             */
            options: components["schemas"]["StartOptions"];
            requested_by: string;
            runtime?: null | components["schemas"]["ProfileRuntime"];
            service: string;
            /** Format: date-time */
            started_at?: string | null;
            status: components["schemas"]["ProfileStatus"];
            status_reason?: string | null;
            target: components["schemas"]["Target"];
            /** Format: date-time */
            updated_at: string;
        };
        /** @description Where to act on a profile and read it. */
        ProfileLinks: {
            flamegraph: string;
            flamegraph_svg: string;
            folded: string;
            self: string;
            stop: string;
            top: string;
        };
        /**
         * @description What a profile measures. Profiles of different modes of one target
         *     may run at the same time (a CPU and an allocation profile); two of
         *     the same mode may not.
         * @enum {string}
         */
        ProfileMode: "cpu" | "wall" | "off-cpu" | "lock" | "alloc" | "heap";
        /**
         * @description Plugin, event and cost control of a start or of a schedule's runs;
         *     absent fields take the agent's defaults.
         */
        ProfileOptions: {
            duty_cycle?: null | components["schemas"]["DutyCycleOptions"];
            /**
             * @description `cpu-clock` (the default; `cycles` where a PMU exists); `off-cpu`
             *     (native: time threads spend switched out, at the stack where they
             *     blocked); `wall` (native and python: on and off CPU alike); for the
             *     JVM `alloc-bytes` (allocation samples), `heap-bytes` (one class
             *     histogram when the profile ends) or `lock` (time waiting for
             *     monitors and parked). Decides the profile's mode: a CPU and an
             *     off-CPU profile of one target may run at once.
             * @example off-cpu
             */
            event?: string | null;
            fda?: null | components["schemas"]["FdaOptions"];
            /**
             * Format: double
             * @description FSP: keep each window's busiest threads up to this cumulative share
             *     of its samples, in (0, 1]; the agent's default (0.99) when absent.
             */
            fsp_share?: number | null;
            /**
             * @description `pid` targets only: profile the process's descendants too (those
             *     alive at the start and those it forks later) and every thread of
             *     each; false when absent. Per CPU, a child is sampled from its first
             *     sample; where the agent samples per thread, descendants and threads
             *     are found by rescans (once a second), missing what lives shorter.
             */
            include_children?: boolean;
            /**
             * Format: int64
             * @description `off-cpu` and `lock`: waits shorter than this many microseconds are
             *     not recorded (at most 10 s); every wait when absent.
             */
            min_wait_us?: number | null;
            /**
             * Format: double
             * @description CPU the agent may spend on the profile, share of one core in
             *     (0, 1]; the agent's default (0.01) when absent.
             */
            overhead_budget?: number | null;
            /**
             * @description `native`, `python` or `jvm`: overrides the agent's language
             *     detection (e.g. `native` on a Python process to see the
             *     interpreter's C frames).
             * @example jvm
             */
            plugin?: string | null;
        };
        /**
         * @description A profile's runtime as its agent reported it in `profile_started`:
         *     what rules on library versions and runtime options read. Fields an
         *     agent did not report (agents older than the runtime contract) are empty.
         */
        ProfileRuntime: {
            language?: null | components["schemas"]["Language"];
            runtime?: components["schemas"]["RuntimeInfo"];
            /** @description `3.11`, `17.0.15`. */
            runtime_version?: string | null;
        };
        /**
         * @description requested → dispatched → running → finished / stopped / failed, or
         *     expired when no agent ever acknowledged.
         * @enum {string}
         */
        ProfileStatus: "requested" | "dispatched" | "running" | "finished" | "stopped" | "failed" | "expired";
        /** @description A page of profiles, newest first. */
        ProfilesPage: {
            /** @description Pass as `cursor` for the next page; absent on the last page. */
            next_cursor?: string | null;
            profiles: components["schemas"]["Profile"][];
        };
        /** @description A re-analysis of past profiles after a rule changed. */
        Reanalysis: {
            error?: string | null;
            /** Format: date-time */
            finished_at?: string | null;
            /** Format: uuid */
            id: string;
            /** Format: int64 */
            profiles_done: number;
            /**
             * Format: int64
             * @description Profiles to evaluate, known once the pipeline starts the job.
             */
            profiles_total?: number | null;
            /** Format: date-time */
            requested_at: string;
            requested_by: string;
            rule_id: string;
            /** Format: date-time */
            started_at?: string | null;
            status: components["schemas"]["ReanalysisStatus"];
        };
        /**
         * @description Where a re-analysis stands.
         * @enum {string}
         */
        ReanalysisStatus: "pending" | "running" | "finished" | "failed";
        /**
         * @description What a control request asks for.
         * @enum {string}
         */
        RequestKind: "deploy" | "undeploy" | "stop";
        RequestLinks: {
            /** @description The request, to follow until it ends. */
            self: string;
        };
        RequestList: {
            requests: components["schemas"]["ControlRequest"][];
        };
        /**
         * @description Where a control request stands.
         * @enum {string}
         */
        RequestStatus: "requested" | "dispatched" | "running" | "finished" | "failed";
        /** @description A detection rule. */
        Rule: {
            /** Format: date-time */
            created_at: string;
            enabled: boolean;
            explanation: string;
            fix: string;
            id: string;
            kind: string;
            link: string;
            service_thresholds: {
                [key: string]: number;
            };
            /** @description `seed` or `user`. */
            source: string;
            /** @description The rule kind's own parameters. */
            spec: Record<string, unknown>;
            /** Format: double */
            threshold_pct: number;
            title: string;
            /** Format: date-time */
            updated_at: string;
        };
        /**
         * @description A rule as an admin writes it (`POST` carries the `id`; `PUT` takes it
         *     from the path).
         */
        RuleBody: {
            enabled?: boolean;
            explanation: string;
            fix: string;
            /** @description Lower-case letters, digits, `.`, `-` and `_`; 1 to 63 characters. */
            id?: string | null;
            /**
             * @description `stack_share`, `share_regression`, `library_version` or
             *     `runtime_option` (see rules/README.md).
             */
            kind: string;
            /** @description An http(s) link to read more. */
            link: string;
            /** @description Per-service overrides of `threshold_pct`. */
            service_thresholds?: {
                [key: string]: number;
            };
            /** @description The kind's parameters, e.g. `{"function": "regex", "leaf_only": true}`. */
            spec: Record<string, unknown>;
            /** Format: double */
            threshold_pct: number;
            title: string;
        };
        /** @description `PATCH`: absent fields stay as they are. */
        RulePatch: {
            enabled?: boolean | null;
            /** @description Replaces all the per-service overrides. */
            service_thresholds?: {
                [key: string]: number;
            } | null;
            spec?: Record<string, unknown> | null;
            /** Format: double */
            threshold_pct?: number | null;
        };
        /** @description A rule with its latest re-analysis of past profiles. */
        RuleView: {
            /** Format: date-time */
            created_at: string;
            enabled: boolean;
            explanation: string;
            fix: string;
            id: string;
            kind: string;
            link: string;
            service_thresholds: {
                [key: string]: number;
            };
            /** @description `seed` or `user`. */
            source: string;
            /** @description The rule kind's own parameters. */
            spec: Record<string, unknown>;
            /** Format: double */
            threshold_pct: number;
            title: string;
            /** Format: date-time */
            updated_at: string;
        } & {
            reanalysis?: null | components["schemas"]["Reanalysis"];
        };
        RulesResponse: {
            rules: components["schemas"]["Rule"][];
        };
        /** @description A run. */
        Run: {
            /** Format: date-time */
            created_at: string;
            /** Format: int64 */
            duration_secs: number;
            /** Format: date-time */
            ended_at?: string | null;
            hosts: components["schemas"]["HostSelection"];
            /** Format: uuid */
            id: string;
            members: components["schemas"]["RunMember"][];
            /**
             * Format: double
             * @description The largest standard error among the top shares when last checked.
             */
            reached_epsilon?: number | null;
            requested_by: string;
            /** Format: int64 */
            samples_used?: number | null;
            /**
             * Format: double
             * @description What ending at the stop rule saved of the maximum duration.
             */
            saved_secs?: number | null;
            /** Format: int64 */
            seed: number;
            /** @description The hosts chosen, from how many, and per stratum. */
            selection: components["schemas"]["Selection"];
            service: string;
            status: components["schemas"]["RunStatus"];
            status_reason?: string | null;
            stop_when?: null | components["schemas"]["StopRule"];
            stratify_by: string[];
        };
        /** @description A run's flame graph JSON answers: the tree or a speedscope file. */
        RunFlameGraphBody: components["schemas"]["RunFlameGraphJson"] | components["schemas"]["SpeedscopeFile"];
        /**
         * @description A run's aggregate (all its members) as a flame graph tree
         *     (`format=json`).
         */
        RunFlameGraphJson: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            hosts: components["schemas"]["HostSummary"][];
            /** Format: int64 */
            profiles: number;
            root: components["schemas"]["FlameNode"];
            /** Format: uuid */
            run_id: string;
            /**
             * Format: int64
             * @description Every sample of every member (the root's count).
             */
            samples: number;
            service: string;
            /** Format: int64 */
            snapshots: number;
        };
        /**
         * @description One chosen host of a run: its member, its samples, its hottest
         *     functions and how far it is from the other hosts.
         */
        RunHost: {
            /** @description Degrees of freedom (0 when not tested: no samples or no peers). */
            df: number;
            /**
             * Format: double
             * @description Total variation distance of its shares from the others', 0 to 1.
             */
            distance: number;
            host: string;
            /**
             * @description The labels its agent reports (empty when it no longer reports the
             *     service).
             */
            labels: {
                [key: string]: string;
            };
            moved?: null | components["schemas"]["FunctionMove"];
            /** @description `p_value` is below `alpha / hosts`. */
            outlier: boolean;
            /** Format: double */
            p_value: number;
            /**
             * Format: uuid
             * @description Absent when the host's member could not be started.
             */
            profile_id?: string | null;
            /** Format: int64 */
            samples: number;
            /** Format: int64 */
            snapshots: number;
            /**
             * Format: double
             * @description Chi-square statistic of its function counts against the other
             *     hosts pooled (0 when not tested).
             */
            statistic: number;
            status: components["schemas"]["ProfileStatus"];
            /** @description Its largest self shares, hottest first. */
            top: components["schemas"]["HostFunction"][];
        };
        /**
         * @description `GET /api/v1/runs/{id}/hosts`: the per-host breakdown and the hosts
         *     whose function mix differs most from the rest of the run.
         */
        RunHostsResponse: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            /** @description The run's top functions the test compares one by one. */
            functions: string[];
            /** @description Every chosen host, most different first (by statistic). */
            hosts: components["schemas"]["RunHost"][];
            /** @description How hosts were compared. */
            options: components["schemas"]["OutlierOptions"];
            /** @description The flagged hosts, most different first. */
            outliers: string[];
            /** Format: uuid */
            run_id: string;
            /** Format: int64 */
            samples: number;
            service: string;
            /**
             * Format: double
             * @description `alpha / hosts`: p-values below it are flagged.
             */
            threshold: number;
        };
        /**
         * @description A rule that flagged a run's merged samples: one finding (and one alert
         *     per channel) for the whole run.
         */
        RunIssue: components["schemas"]["Issue"] & {
            /** @description The hosts where the rule measures most, highest first (at most 5). */
            hosts: components["schemas"]["RunIssueHost"][];
        };
        /** @description A host of a run and how much of its samples a finding's rule matched. */
        RunIssueHost: {
            host: string;
            /** Format: uuid */
            profile_id: string;
            /** Format: int64 */
            samples: number;
            /**
             * Format: double
             * @description Percent of the host's samples (or the rule kind's score).
             */
            share: number;
        };
        /**
         * @description `GET /api/v1/runs/{id}/issues`: what the rules found in the run once it
         *     ended.
         */
        RunIssuesResponse: {
            /**
             * Format: date-time
             * @description When the rules judged the run; `null` while it runs and until the
             *     pipeline has evaluated it (about a second after it ended).
             */
            evaluated_at?: string | null;
            /** @description Largest share first. */
            issues: components["schemas"]["RunIssue"][];
            /** Format: uuid */
            run_id: string;
        };
        /** @description One chosen host's member profile, or why it has none. */
        RunMember: {
            host: string;
            /**
             * Format: uuid
             * @description Absent when no profile was recorded for the host (its target
             *     already had a live profile, or the start failed before recording
             *     one); a start the broker refused links its failed profile.
             */
            profile_id?: string | null;
            /**
             * @description Why a member failed, expired or was not started: a member not
             *     started says `not started: ...` (`the target already has a live
             *     profile <id>`, `the broker refused the start command: ...`).
             */
            reason?: string | null;
            /** @description `failed` for a member that was not started. */
            status: components["schemas"]["ProfileStatus"];
        };
        /**
         * @description What happened to one occurrence of a schedule.
         * @enum {string}
         */
        RunOutcome: "started" | "missed" | "skipped_busy" | "failed";
        /**
         * @description `GET /api/v1/runs/{id}/precision`: the run's aggregate's top shares
         *     with their standard errors now, and whether its stop rule is met.
         */
        RunPrecision: {
            decision: components["schemas"]["StopDecision"];
            /** Format: uuid */
            run: string;
            /** @description The rule evaluated (the run's own, or top 5 to ±1% without one). */
            stop_when: components["schemas"]["StopRule"];
        };
        /**
         * @description Where a run is: `dispatching` until a member runs, `running`, then
         *     `finished`, `stopped` (on request), `precise` (its stop rule was met)
         *     or `partial` (every member ended, and some chosen hosts have no
         *     profile to show: not started, failed or expired; each member's `reason`
         *     says why, and the rest of the run is kept).
         * @enum {string}
         */
        RunStatus: "dispatching" | "running" | "finished" | "stopped" | "precise" | "partial";
        /** @description A run's members' windows, in time order. */
        RunTimelineJson: {
            /**
             * @description The members' windows summed: what their targets earned, what the
             *     run holds, and what was lost and why.
             */
            coverage?: components["schemas"]["SampleCoverage"];
            /** Format: uuid */
            run_id: string;
            windows: components["schemas"]["TimelineWindow"][];
        };
        /** @description A run's hottest functions over all its members. */
        RunTopResponse: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            /** @description Hottest first by self samples. */
            functions: components["schemas"]["FunctionShare"][];
            /** @description Hosts with samples. */
            hosts: number;
            /** Format: uuid */
            run_id: string;
            /** Format: int64 */
            samples: number;
            service: string;
        };
        /** @description One firing of a schedule. */
        RunView: {
            detail?: string | null;
            /** Format: date-time */
            fired_at: string;
            outcome: components["schemas"]["RunOutcome"];
            /** Format: uuid */
            profile_id?: string | null;
            /**
             * Format: uuid
             * @description The run a run schedule's firing started.
             */
            run_id?: string | null;
            /** Format: date-time */
            scheduled_for: string;
        };
        /** @description `GET /api/v1/runs`. */
        RunsResponse: {
            runs: components["schemas"]["Run"][];
        };
        RuntimeInfo: {
            executable?: null | components["schemas"]["Executable"];
            /**
             * @description Runtime options as the runtime spells them: JVM flags from
             *     `VM.flags` and the command line (`-XX:+UseG1GC`, `-Xmx512m`),
             *     Python's interpreter options (`-O`, `-X dev`) and the `PYTHON*`
             *     environment settings that change its behaviour.
             */
            flags?: string[];
            /** @description Libraries the target runs with, deduplicated by (kind, name, version). */
            libraries?: components["schemas"]["Library"][];
            /** @description More libraries were found than [`MAX_LIBRARIES`]. */
            libraries_truncated?: boolean;
        };
        /**
         * @description A profile's (or a run's) samples against what its targets earned. The
         *     default, nothing known, is what an answer of a server before coverage
         *     reads as.
         */
        SampleCoverage: {
            /**
             * Format: int64
             * @description Samples stored.
             */
            captured: number;
            /**
             * Format: int64
             * @description Samples the targets earned (their CPU time × the rate), over the
             *     windows that measured it; null when none could (the event is not
             *     CPU time, or the plugin's samples do not follow it).
             */
            expected?: number | null;
            lost: components["schemas"]["LostSamples"];
            /**
             * Format: double
             * @description The share of expected that is not captured, lost or unaccounted.
             */
            missing_share?: number | null;
            /**
             * Format: int64
             * @description Expected less captured and lost: the gap no reason explains. Small
             *     negative values are sampling noise (and CPU time's 10 ms ticks).
             */
            unaccounted?: number | null;
            /** @description Said when more than 2% of expected is missing. */
            warning?: string | null;
        };
        /**
         * @description What one sample of an answer stands for: `period` units of `unit`
         *     (a sample of a 99 Hz CPU profile is 10,101,010 nanoseconds). Views
         *     multiply counts by it to show time (or bytes), so that a wall or
         *     off-CPU profile reads in seconds, not samples.
         */
        SampleUnit: {
            /**
             * Format: double
             * @description Units per sample, when known.
             */
            period?: number | null;
            /**
             * @description `nanoseconds`, `bytes`, `cycles`, or `samples` when the event is
             *     unknown (an imported file that did not say).
             */
            unit: string;
        };
        Schedule: {
            /** Format: date-time */
            created_at: string;
            created_by: string;
            cron: string;
            /** Format: int32 */
            duration_secs: number;
            enabled: boolean;
            /** Format: int32 */
            frequency_hz: number;
            host: string;
            /** Format: uuid */
            id: string;
            /** Format: date-time */
            last_run_at?: string | null;
            mode: components["schemas"]["ProfileMode"];
            name: string;
            /** Format: date-time */
            next_run_at?: string | null;
            /** @description Plugin, event and cost control of every run (see `Profile`). */
            options: components["schemas"]["StartOptions"];
            run?: null | components["schemas"]["ScheduleRun"];
            service: string;
            target: components["schemas"]["Target"];
            timezone: string;
            /** Format: date-time */
            updated_at: string;
            /** Format: int32 */
            window_secs?: number | null;
        };
        /**
         * @description The run a run schedule starts each time it fires, as `POST
         *     /api/v1/runs` would (the service, duration, frequency, window and
         *     options are the schedule's own).
         */
        ScheduleRun: {
            /**
             * @description Which of the live hosts running the service: `"all"` (default),
             *     `{"count": K}` or `{"percent": P}`, chosen anew at each firing.
             */
            hosts?: components["schemas"]["HostSelection"];
            /**
             * Format: int64
             * @description The same seed at every firing (random each time when absent).
             */
            seed?: number | null;
            stop_when?: null | components["schemas"]["StopRule"];
            stratify_by?: string[];
            strict?: boolean;
        };
        /** @description A schedule with its latest runs, newest first. */
        ScheduleWithRuns: components["schemas"]["Schedule"] & {
            runs: components["schemas"]["RunView"][];
        };
        SchedulesResponse: {
            schedules: components["schemas"]["Schedule"][];
        };
        /** @description The hosts chosen, and what a run records about how. */
        Selection: {
            /** @description True when `K` was above the live hosts and all of them were taken. */
            capped: boolean;
            /** @description Live hosts the choice was made from. */
            eligible: number;
            /** @description Chosen host ids, sorted. */
            hosts: string[];
            /** @description Hosts the selection asked for: `K`, `ceil(P%)` or all. */
            requested: number;
            /** @description Per stratum, in label-value order; empty without `stratify_by`. */
            strata: components["schemas"]["Stratum"][];
        };
        /** @description A defined service. */
        Service: {
            /** Format: date-time */
            created_at: string;
            created_by: string;
            description?: string | null;
            name: string;
            owner_team?: string | null;
            /** @description The processes that are the service on each host. */
            target: components["schemas"]["Target"];
            /** Format: date-time */
            updated_at: string;
        };
        /**
         * @description A live host running a service: its agent heartbeated within the
         *     liveness window and reported a process matching the service's target.
         */
        ServiceHost: {
            agent_id: string;
            host: string;
            /**
             * @description The host's labels as its agent reports them: discovered (`kernel`,
             *     `cpu_model`, `cores`) and set by the operator (`zone`, `version`, …).
             */
            labels: {
                [key: string]: string;
            };
            /** Format: date-time */
            last_seen: string;
        };
        /** @description `GET /api/v1/services/{name}/hosts`. */
        ServiceHostsResponse: {
            hosts: components["schemas"]["ServiceHost"][];
            /**
             * Format: int64
             * @description A host counts as live while its last heartbeat is this recent.
             */
            live_within_secs: number;
            service: string;
            target: components["schemas"]["Target"];
        };
        /** @description `GET /api/v1/services`. */
        ServicesResponse: {
            services: components["schemas"]["Service"][];
        };
        /** @description One function's aggregate self share and its errors. */
        ShareEstimate: {
            /**
             * Format: double
             * @description `sqrt(m/(m-1) Σ_i (y_i - p n_i)²) / Σ_i n_i`; none with one host.
             */
            between_host_stderr?: number | null;
            function: string;
            /** Format: double */
            pooled_stderr: number;
            /**
             * Format: double
             * @description `Σ_i y_i / Σ_i n_i` over hosts `i`.
             */
            share: number;
            /**
             * Format: double
             * @description The standard error the stop rule uses (see [`StderrMethod`]).
             */
            stderr: number;
        };
        /** @description One side of a diff. */
        SideSummary: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            label: string;
            /** Format: int64 */
            profiles: number;
            /** Format: int64 */
            samples: number;
        };
        /**
         * @description speedscope's file format (`format=speedscope`), as speedscope.app
         *     reads it.
         */
        SpeedscopeFile: {
            $schema: string;
            activeProfileIndex: number;
            exporter: string;
            name: string;
            profiles: components["schemas"]["SpeedscopeSampledProfile"][];
            shared: components["schemas"]["SpeedscopeShared"];
        };
        SpeedscopeFrameName: {
            name: string;
        };
        SpeedscopeSampledProfile: {
            /** Format: int64 */
            endValue: number;
            name: string;
            /** @description Frame indexes, root first. */
            samples: number[][];
            /** Format: int64 */
            startValue: number;
            /** @description Always `sampled`. */
            type: string;
            /** @description `none` for plain counts, `nanoseconds` when weights are times. */
            unit: string;
            weights: number[];
        };
        SpeedscopeShared: {
            frames: components["schemas"]["SpeedscopeFrameName"][];
        };
        /**
         * @description Per-profile cost-control settings; every field absent means "the
         *     agent's default".
         */
        StartOptions: {
            duty_cycle?: null | components["schemas"]["DutyCycle"];
            event?: null | components["schemas"]["EventKind"];
            fda?: null | components["schemas"]["FdaSettings"];
            /**
             * Format: double
             * @description FSP: keep the busiest threads up to this cumulative share of a
             *     window's samples, in (0, 1]; 1 keeps every thread.
             */
            fsp_share?: number | null;
            /**
             * @description A pid target's descendants are profiled too: those alive at the
             *     start and those forked later, with every thread of each; for pid
             *     targets only. Left out when false, so commands and stored options
             *     without it read as before; an agent older than the option ignores
             *     it and profiles the pid alone.
             */
            include_children?: boolean;
            /**
             * Format: int64
             * @description For wait events (`off-cpu`, `lock`): waits shorter than this many
             *     microseconds are not recorded, which keeps the cost of a target
             *     that blocks very often for very short times down. Their time is
             *     missing from the profile, so the default records every wait.
             */
            min_wait_us?: number | null;
            /**
             * Format: double
             * @description CPU the agent may spend on this profile, as a share of one core
             *     (0.01 = 1 %); the frequency is lowered to stay inside it.
             */
            overhead_budget?: number | null;
            plugin?: null | components["schemas"]["Language"];
        };
        /**
         * @description `POST /api/v1/profiles`: profile processes on a host, given by exactly
         *     one of `pid`, `process_name`, `cmdline` or `cgroup`.
         */
        StartRequest: {
            /**
             * @description A cgroup path (`/system.slice/x.service`; processes in it and below
             *     it) or a container id (12 to 64 hex digits).
             */
            cgroup?: string | null;
            /**
             * @description A regex (unanchored) over the full command line, arguments joined
             *     by spaces: every matching process is profiled.
             */
            cmdline?: string | null;
            /** Format: int64 */
            duration_secs: number;
            /**
             * Format: int32
             * @description Samples per second; 99 when absent.
             */
            frequency_hz?: number | null;
            host: string;
            /** @description Free-form labels to find the profile by (`{"env": "prod"}`). */
            labels?: {
                [key: string]: string;
            };
            options?: null | components["schemas"]["ProfileOptions"];
            /** Format: int32 */
            pid?: number | null;
            /** @description The executable name (`/proc/PID/comm`), without `/`. */
            process_name?: string | null;
            /**
             * @description The service the target belongs to; defaults to `process_name`, or
             *     the host when profiling by pid. Required with `cmdline` and `cgroup`,
             *     which name no program to default to. Token `services` patterns
             *     apply to it.
             */
            service?: string | null;
            /**
             * Format: int64
             * @description Aggregation window; the agent's default (10 s) when absent.
             */
            window_secs?: number | null;
        };
        /**
         * @description How a share's standard error was estimated.
         * @enum {string}
         */
        StderrMethod: "pooled" | "larger" | "between_host";
        /** @description A stop rule's verdict on the aggregate so far. */
        StopDecision: {
            hosts: number;
            /** @description Every top share's error is within the rule's ε. */
            met: boolean;
            method: components["schemas"]["StderrMethod"];
            /**
             * Format: int64
             * @description Samples the rule would need at the current error's rate
             *     (`N (stderr / ε)²` for the worst top share), for a progress view.
             */
            projected_samples?: number | null;
            /**
             * Format: double
             * @description The largest error among the top shares: the ε reached. None
             *     before any sample.
             */
            reached_epsilon?: number | null;
            /** Format: int64 */
            samples_used: number;
            top: components["schemas"]["ShareEstimate"][];
        };
        /**
         * @description `stop_when`: stop once each of the `top` largest self shares has a
         *     standard error of at most `max_stderr`.
         */
        StopRule: {
            /**
             * Format: double
             * @description ε, a share in (0, 1): 0.005 is half a percentage point.
             */
            max_stderr: number;
            /**
             * Format: int32
             * @description K, at least 1.
             */
            top: number;
        };
        /** @description One combination of the `stratify_by` labels' values. */
        Stratum: {
            chosen: number;
            eligible: number;
            /** @description The stratifying labels' values; a label a host lacks is absent. */
            labels: {
                [key: string]: string;
            };
        };
        /** @description Which process(es) on a host a profile samples. */
        Target: {
            /** @enum {string} */
            by: "pid";
            /**
             * Format: int32
             * @description One process by id.
             */
            value: number;
        } | {
            /** @enum {string} */
            by: "process_name";
            /** @description Every process whose executable name (`/proc/PID/comm`) equals this. */
            value: string;
        } | {
            /** @enum {string} */
            by: "cmdline";
            /**
             * @description Every process whose full command line (`/proc/PID/cmdline`, the
             *     arguments joined by spaces) matches this regex, unanchored.
             */
            value: string;
        } | {
            /** @enum {string} */
            by: "cgroup";
            /**
             * @description Every process in this cgroup or below it (`/system.slice/x.scope`),
             *     or in a container given by its id (64 hex digits or a prefix of at
             *     least 12), found as a component of the cgroup path.
             */
            value: string;
        } | {
            /** @enum {string} */
            by: "imported";
            /**
             * @description No process: samples uploaded from another tool's file, in this
             *     format (`pprof`, `folded`). Agents refuse such targets.
             */
            value: string;
        };
        /** @description A profile's windows in time order. */
        TimelineJson: {
            /** Format: uuid */
            profile_id: string;
            windows: components["schemas"]["TimelineWindow"][];
        };
        /** @description One window of a profile on one host. */
        TimelineWindow: {
            event: components["schemas"]["EventKind"];
            /**
             * Format: int64
             * @description Samples the target earned in the window (its CPU time × the rate);
             *     null when the plugin's samples do not follow CPU time, or for
             *     windows of agents that did not measure it.
             */
            expected?: number | null;
            /** Format: int32 */
            frequency_hz: number;
            host: string;
            /** @description Samples the target earned that the window lacks, by why. */
            lost?: components["schemas"]["LostSamples"];
            /** Format: int64 */
            samples: number;
            /** Format: date-time */
            window_end: string;
            /** Format: date-time */
            window_start: string;
        };
        /** @description A profile's hottest functions. */
        TopResponse: components["schemas"]["SampleUnit"] & {
            event?: null | components["schemas"]["EventKind"];
            /** @description Hottest first by self samples. */
            functions: components["schemas"]["FunctionShare"][];
            /** Format: uuid */
            profile_id: string;
            /** Format: int64 */
            samples: number;
        };
        /** @description One step of a trend. */
        TrendPoint: {
            /**
             * Format: double
             * @description For CPU time: the cores the function kept busy on average over the
             *     step, summed over hosts.
             */
            cores?: number | null;
            /** Format: double */
            cores_stderr?: number | null;
            /** Format: int64 */
            end_ms: number;
            /** Format: int64 */
            hosts: number;
            /**
             * Format: int64
             * @description Samples with the function on their stack.
             */
            matched: number;
            /** Format: int64 */
            samples: number;
            /**
             * Format: double
             * @description The function's samples per second of the step.
             */
            samples_per_second: number;
            /**
             * Format: double
             * @description `matched / samples`, `None` without samples.
             */
            share?: number | null;
            /** Format: double */
            share_stderr?: number | null;
            /**
             * Format: int64
             * @description Unix milliseconds: the step is `[start_ms, end_ms)`.
             */
            start_ms: number;
            /**
             * Format: int64
             * @description Windows (whose start falls in the step) and the hosts they came
             *     from.
             */
            windows: number;
        };
        /**
         * @description `GET /api/v1/services/{name}/trend`: a function's share of the
         *     service's samples and the CPU it takes, step by step, each with its
         *     standard error.
         */
        TrendResponse: {
            event?: null | components["schemas"]["EventKind"];
            /** @description The regex a frame of a stack matches for its samples to count. */
            function: string;
            /** @description Only these hosts; every host when empty. */
            hosts: string[];
            /** @description One per step, gaps included (no windows: no share). */
            points: components["schemas"]["TrendPoint"][];
            service: string;
            /** Format: date-time */
            since: string;
            /** Format: int64 */
            step_secs: number;
            /** Format: date-time */
            until: string;
        };
        /**
         * @description A trigger, and what it did: its profiles are ordinary profiles
         *     labelled `trigger=<id>` and `trigger_observed=<value and unit>`.
         */
        Trigger: {
            condition: components["schemas"]["TriggerCondition"];
            /** Format: int32 */
            cooldown_secs: number;
            /** Format: date-time */
            created_at: string;
            created_by: string;
            /** Format: int64 */
            duration_secs: number;
            enabled: boolean;
            event: components["schemas"]["EventKind"];
            /**
             * Format: int64
             * @description Firings that started a profile.
             */
            fired: number;
            /** Format: int32 */
            frequency_hz: number;
            /**
             * Format: int64
             * @description Firings held back by the cooldown or the cap.
             */
            held_back: number;
            held_back_reason?: string | null;
            /**
             * Format: date-time
             * @description Since when firings are held back, and why (cleared by the next
             *     profile it starts): reported once, not once per firing.
             */
            held_back_since?: string | null;
            /** @description The hosts that watch it; absent: every host that runs the service. */
            hosts?: string[] | null;
            /** Format: uuid */
            id: string;
            /** Format: date-time */
            last_fired_at?: string | null;
            /** Format: int32 */
            max_concurrent: number;
            service: string;
            /** Format: date-time */
            updated_at: string;
            updated_by: string;
        };
        /**
         * @description What must hold, on one host, for a trigger to fire. Whole numbers, so a
         *     sync's digest has one encoding of it.
         */
        TriggerCondition: {
            /** Format: int32 */
            for_secs: number;
            /** @enum {string} */
            kind: "cpu_above";
            /** Format: int32 */
            percent: number;
        } | {
            /** Format: int32 */
            for_secs: number;
            /** @enum {string} */
            kind: "rss_growth";
            /** Format: int32 */
            mib_per_min: number;
        };
        /** @description One firing: a host where the condition held. */
        TriggerFiring: {
            /**
             * Format: date-time
             * @description When the api-server received it.
             */
            fired_at: string;
            /**
             * Format: date-time
             * @description When the condition began to hold (the agent's clock).
             */
            held_since: string;
            host: string;
            /** Format: uuid */
            id: string;
            /**
             * Format: double
             * @description What the agent measured, in `unit`.
             */
            observed: number;
            outcome: components["schemas"]["FiringOutcome"];
            /** Format: uuid */
            profile_id?: string | null;
            reason?: string | null;
            unit: string;
        };
        /** @description `GET /api/v1/triggers/{id}/firings`: the latest first. */
        TriggerFiringsResponse: {
            firings: components["schemas"]["TriggerFiring"][];
        };
        /** @description `GET /api/v1/triggers`. */
        TriggersResponse: {
            triggers: components["schemas"]["Trigger"][];
        };
        /** @enum {string} */
        UndeployMode: "now" | "drain";
        UndeployResponse: {
            /** Format: uuid */
            command_id?: string | null;
            host: string;
            mode: components["schemas"]["UndeployMode"];
            request: components["schemas"]["ControlRequest"];
        };
        /**
         * @description `PATCH /api/v1/channels/{id}`: absent fields stay as they are; each
         *     field must suit the channel's kind.
         */
        UpdateChannelRequest: {
            enabled?: boolean | null;
            /** @description Email: a new sender address. */
            from?: string | null;
            /**
             * @description Webhook: a new secret (rotation); deliveries sent from now on are
             *     signed with it.
             */
            secret?: string | null;
            /** @description A new glob over the services whose alerts go here. */
            service_pattern?: string | null;
            /** @description Email: a new relay. */
            smtp_url?: string | null;
            /** @description Email: replaces every recipient. */
            to?: string[] | null;
            /** @description Webhook: a new URL. */
            url?: string | null;
        };
        /**
         * @description `PATCH /api/v1/continuous/{id}`: what is given is replaced. An empty
         *     `hosts` list means every host that runs the service; `enabled: false`
         *     turns it off (its agents stop within seconds) and `true` on again.
         */
        UpdateContinuousRequest: {
            /** Format: double */
            cpu_budget_percent?: number | null;
            enabled?: boolean | null;
            event?: null | components["schemas"]["EventKind"];
            /** Format: int32 */
            frequency_hz?: number | null;
            hosts?: string[] | null;
        };
        /** @description `PATCH /api/v1/schedules/{id}`: absent fields stay as they are. */
        UpdateScheduleRequest: {
            cron?: string | null;
            /** Format: int64 */
            duration_secs?: number | null;
            enabled?: boolean | null;
            /** Format: int32 */
            frequency_hz?: number | null;
            timezone?: string | null;
        };
        /**
         * @description `PATCH /api/v1/services/{name}`: what is given is replaced; a new
         *     target is one of `process_name`, `cmdline` or `cgroup`. An empty
         *     `owner_team` or `description` clears it.
         */
        UpdateServiceRequest: {
            cgroup?: string | null;
            cmdline?: string | null;
            description?: string | null;
            owner_team?: string | null;
            process_name?: string | null;
        };
        /**
         * @description `PATCH /api/v1/triggers/{id}`: what is given is replaced. An empty
         *     `hosts` list means every host; `enabled: false` turns it off.
         */
        UpdateTriggerRequest: {
            condition?: null | components["schemas"]["TriggerCondition"];
            /** Format: int32 */
            cooldown_secs?: number | null;
            /** Format: int64 */
            duration_secs?: number | null;
            enabled?: boolean | null;
            event?: null | components["schemas"]["EventKind"];
            /** Format: int32 */
            frequency_hz?: number | null;
            hosts?: string[] | null;
            /** Format: int32 */
            max_concurrent?: number | null;
        };
        /**
         * @description The `kind` of a webhook's create request.
         * @enum {string}
         */
        WebhookKind: "webhook";
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    openapi_json: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description This document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
        };
    };
    enroll_agent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EnrollAgentRequest"];
            };
        };
        responses: {
            /** @description Enrolled: the certificate for the agent's key */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedAgentIdentity"];
                };
            };
            /** @description Malformed input: a body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No enrollment token has this secret. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token was revoked, has expired, or is for another host. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Every use of the token was taken. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A bad host or public key. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_enrollment_tokens: {
        parameters: {
            query?: {
                /** @description Only those of this host. */
                host?: string;
                /** @description At most this many; 50 when absent. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tokens */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EnrollmentTokenList"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_enrollment_token: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateEnrollmentTokenRequest"];
            };
        };
        responses: {
            /** @description Created, with its secret */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedEnrollmentToken"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    revoke_enrollment_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Token id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EnrollmentToken"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_agent_identities: {
        parameters: {
            query?: {
                /** @description Only those of this host. */
                host?: string;
                /** @description At most this many; 50 when absent. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The identities */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentIdentityList"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    issue_agent_identity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["IssueAgentIdentityRequest"];
            };
        };
        responses: {
            /** @description Issued */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedAgentIdentity"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    revoke_agent_identity: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Identity id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked identity */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentIdentityRecord"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    aggregate: {
        parameters: {
            query: {
                service: string;
                /** @description RFC 3339 time: profiles created at or after it. */
                since: string;
                /**
                 * @description RFC 3339 time: profiles created before it; at most 31 days after
                 *     `since`.
                 */
                until: string;
                /** @description Only these hosts; repeat the parameter or separate with commas. */
                host?: string[];
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
                format?: "json" | "folded" | "svg" | "pprof" | "speedscope";
                /**
                 * @description SVG: roots at the bottom (`flame`, the default) or on top
                 *     (`icicle`).
                 */
                orientation?: "flame" | "icicle";
                /**
                 * @description JSON: at most about this many nodes (default 8192); lighter
                 *     subtrees merge into one `other` node per parent.
                 */
                max_nodes?: number;
                /**
                 * @description Only profiles of this event (`cpu-clock`, `off-cpu`, `wall`,
                 *     `lock`...). Needed when the range holds profiles of several events,
                 *     whose samples cannot be added: the answer is then a 422 naming them.
                 */
                event?: string;
                /**
                 * @description JSON: open only the subtree at this path of frame names,
                 *     `;`-separated from the root (as the UI asks when a node is zoomed).
                 */
                focus?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The merged flame graph in the requested format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AggregateBody"];
                    "application/octet-stream": number[];
                    "image/svg+xml": string;
                    "text/plain": string;
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description `format=svg` of an aggregate without samples */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_channels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The channels */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChannelList"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_channel: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateChannelRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Channel"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A channel of that name exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_channel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Channel id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The channel */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Channel"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    delete_channel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Channel id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    update_channel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Channel id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateChannelRequest"];
            };
        };
        responses: {
            /** @description The changed channel */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Channel"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    channel_deliveries: {
        parameters: {
            query?: {
                /** @description Only deliveries in this state. */
                status?: "pending" | "delivered" | "failed";
                /** @description Page size; 50 when absent. */
                limit?: number;
                /** @description The previous page's `next_before`: deliveries queued before it. */
                before?: string;
            };
            header?: never;
            path: {
                /** @description Channel id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of deliveries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveriesPage"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_continuous: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The continuous profiles */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContinuousProfilesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_continuous: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateContinuousRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContinuousProfile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The service, or another with the same target, is profiled continuously already */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_continuous: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Continuous profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The continuous profile */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContinuousProfile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    delete_continuous: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Continuous profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    update_continuous: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Continuous profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateContinuousRequest"];
            };
        };
        responses: {
            /** @description The changed continuous profile */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContinuousProfile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    diff: {
        parameters: {
            query?: {
                /** @description The baseline profile's id. */
                baseline?: string;
                baseline_service?: string;
                /** @description RFC 3339 time. */
                baseline_since?: string;
                /** @description RFC 3339 time, at most 31 days after `baseline_since`. */
                baseline_until?: string;
                /** @description The baseline run's id: every member's samples. */
                baseline_run?: string;
                /**
                 * @description With `baseline_run`: only its hosts whose agent labels hold every
                 *     `key:value` of this comma-separated list (`version:v1,zone:a`).
                 */
                baseline_labels?: string;
                /** @description The target profile's id. */
                target?: string;
                target_service?: string;
                /** @description RFC 3339 time. */
                target_since?: string;
                /** @description RFC 3339 time, at most 31 days after `target_since`. */
                target_until?: string;
                /** @description The target run's id (may be the baseline's, with other labels). */
                target_run?: string;
                /**
                 * @description With `target_run`: only its hosts whose agent labels hold every
                 *     `key:value` of this comma-separated list.
                 */
                target_labels?: string;
                format?: "json" | "svg";
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
                /** @description How many function changes; 50 when absent. */
                limit?: number;
                /**
                 * @description JSON: at most this many nodes below the root, `other` nodes
                 *     included (default 8192); lighter subtrees merge into one `other`
                 *     node per parent, so every total stays exact.
                 */
                max_nodes?: number;
                /**
                 * @description Aggregate sides: only profiles of this event. Two sides of
                 *     different events are never compared (422).
                 */
                event?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The comparison */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DiffJson"];
                    "image/svg+xml": string;
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_hosts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every agent heard from */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HostsResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    deploy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Host id */
                host: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An agent is live on the host already */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeployResponse"];
                };
            };
            /** @description The deployer runs */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeployResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No deployer is configured */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    undeploy: {
        parameters: {
            query: {
                /**
                 * @description `now`: stop running profiles, flush them and exit; `drain`: refuse
                 *     new profiles and exit when the running ones end.
                 */
                mode: components["schemas"]["UndeployMode"];
            };
            header?: never;
            path: {
                /** @description Host id */
                host: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The undeploy command is sent */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UndeployResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_profiles: {
        parameters: {
            query?: {
                service?: string;
                host?: string;
                /** @description requested, dispatched, running, finished, stopped, failed or expired. */
                status?: string;
                /** @description RFC 3339 time; profiles created at or after it. */
                since?: string;
                /** @description RFC 3339 time; profiles created before it. */
                until?: string;
                /** @description Page size; 50 when absent. */
                limit?: number;
                /** @description The previous page's `next_cursor`. */
                cursor?: string;
                /** @description `key:value` pairs, comma-separated: only profiles with all of them. */
                labels?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of profiles */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfilesPage"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    start_profile: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 200 visible ASCII characters; a retry with the same key returns the same profile */
                "Idempotency-Key"?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StartRequest"];
            };
        };
        responses: {
            /** @description Requested and dispatched */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A live profile of the same target exists; the body's `profile` is it */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DuplicateStart"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    import_profile: {
        parameters: {
            query: {
                /**
                 * @description The service the profile belongs to (the token must be allowed to
                 *     profile it).
                 */
                service: string;
                format: "pprof" | "folded" | "jfr" | "speedscope";
                /** @description The host the samples are stored under; `imported` when absent. */
                host?: string;
                /**
                 * @description pprof: which of the file's sample types to count. JFR: `cpu`
                 *     (execution samples, the default), `alloc` (allocation samples,
                 *     in bytes) or `lock` (monitor enters and parks, in nanoseconds
                 *     waited); without it, a recording with no execution samples counts
                 *     the first other kind it has.
                 */
                sample_type?: string;
                /**
                 * @description What the counts measure; inferred from the pprof sample type, the
                 *     JFR kind (`cpu-clock`, `alloc-bytes`, `lock`) or the speedscope
                 *     unit (`cpu-clock` for `none`, `wall` for times, `alloc-bytes` for
                 *     bytes), and `cpu-clock` for folded stacks, when absent.
                 */
                event?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The file, at most 32 MiB */
        requestBody: {
            content: {
                "application/octet-stream": number[];
                "text/plain": string;
            };
        };
        responses: {
            /** @description The imported profile */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The file exceeds 32 MiB, or holds more distinct stacks or frames than the server's import limits */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_profile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The profile */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    flame_graph: {
        parameters: {
            query?: {
                format?: "json" | "folded" | "svg" | "pprof" | "speedscope";
                /**
                 * @description SVG: roots at the bottom (`flame`, the default) or on top
                 *     (`icicle`).
                 */
                orientation?: "flame" | "icicle";
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
                /** @description Only windows ending after this RFC 3339 time. */
                window_since?: string;
                /** @description Only windows starting before this RFC 3339 time. */
                window_until?: string;
                /**
                 * @description JSON: at most about this many nodes (default 8192); lighter
                 *     subtrees merge into one `other` node per parent, so every total
                 *     stays exact.
                 */
                max_nodes?: number;
                /**
                 * @description JSON: open only the subtree at this path of frame names,
                 *     `;`-separated from the root (as the UI asks when a cut node is
                 *     zoomed).
                 */
                focus?: string;
            };
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The flame graph in the requested format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlameGraphBody"];
                    "application/octet-stream": number[];
                    "image/svg+xml": string;
                    "text/plain": string;
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    profile_issues: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The profile's detections */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    stop_profile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Stop requested */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The profile has ended already */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    timeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The profile's windows */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TimelineJson"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    top_functions: {
        parameters: {
            query?: {
                /** @description How many functions; 20 when absent. */
                limit?: number;
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
                /** @description Only windows ending after this RFC 3339 time. */
                window_since?: string;
                /** @description Only windows starting before this RFC 3339 time. */
                window_until?: string;
            };
            header?: never;
            path: {
                /** @description Profile id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The functions table */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TopResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_requests: {
        parameters: {
            query?: {
                /** @description deploy, undeploy or stop. */
                kind?: string;
                host?: string;
                /** @description Only requests still under way. */
                open?: boolean;
                /** @description How many; 50 when absent. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The requests */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestList"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_request: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Request id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ControlRequest"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_rules: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every rule, seed and user */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RulesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RuleBody"];
            };
        };
        responses: {
            /** @description The rule, its re-analysis queued */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RuleView"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A rule with this id exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Rule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The rule */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RuleView"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    replace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Rule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RuleBody"];
            };
        };
        responses: {
            /** @description The rule, its re-analysis queued */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RuleView"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    change: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Rule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RulePatch"];
            };
        };
        responses: {
            /** @description The rule, its re-analysis queued */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RuleView"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    latest_reanalysis: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Rule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Its progress */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reanalysis"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_runs: {
        parameters: {
            query?: {
                /** @description Only runs of this service. */
                service?: string;
                /** @description At most this many, newest first (default 50). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunsResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_run: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateRunRequest"];
            };
        };
        responses: {
            /** @description Started */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Run"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_run: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Run"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_flame_graph: {
        parameters: {
            query?: {
                format?: "json" | "folded" | "svg" | "pprof" | "speedscope";
                /**
                 * @description SVG: roots at the bottom (`flame`, the default) or on top
                 *     (`icicle`).
                 */
                orientation?: "flame" | "icicle";
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
                /**
                 * @description JSON: at most about this many nodes (default 8192); lighter
                 *     subtrees merge into one `other` node per parent, so every total
                 *     stays exact.
                 */
                max_nodes?: number;
                /**
                 * @description JSON: open only the subtree at this path of frame names,
                 *     `;`-separated from the root.
                 */
                focus?: string;
            };
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run's flame graph in the requested format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunFlameGraphBody"];
                    "application/octet-stream": number[];
                    "image/svg+xml": string;
                    "text/plain": string;
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_hosts: {
        parameters: {
            query?: {
                /**
                 * @description The run's top functions compared one by one (the rest are one
                 *     category); 10 when absent.
                 */
                top_k?: number;
                /**
                 * @description Family-wise false-positive rate; a host is flagged when its
                 *     p-value is below `alpha / hosts`. 0.01 when absent.
                 */
                alpha?: number;
            };
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The hosts, most different first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunHostsResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_issues: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run's findings, largest share first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunIssuesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_precision: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The precision */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunPrecision"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    stop_run: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Stopping */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Run"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The run has ended */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_timeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The members' windows */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunTimelineJson"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    run_top_functions: {
        parameters: {
            query?: {
                /** @description How many functions; 20 when absent. */
                limit?: number;
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
                /** @description Only stacks with a frame matching this regex. */
                include?: string;
                /** @description Without stacks with a frame matching this regex. */
                exclude?: string;
            };
            header?: never;
            path: {
                /** @description Run id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The functions table */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunTopResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_schedules: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The schedules */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SchedulesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewScheduleRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A schedule of that name exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The schedule */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleWithRuns"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    delete_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    update_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateScheduleRequest"];
            };
        };
        responses: {
            /** @description The changed schedule */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_services: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The services */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ServicesResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_service: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateServiceRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Service"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description A service of that name exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_service: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Service name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The service */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Service"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    delete_service: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Service name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    update_service: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Service name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateServiceRequest"];
            };
        };
        responses: {
            /** @description The changed service */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Service"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    service_hosts: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Service name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The hosts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ServiceHostsResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    service_trend: {
        parameters: {
            query: {
                /**
                 * @description The function: a regex a frame of a stack matches (`^parse$`,
                 *     `json\.`).
                 */
                function: string;
                /** @description RFC 3339 time: the range's start. */
                since: string;
                /** @description RFC 3339 time: the range's end; at most 31 days after `since`. */
                until: string;
                /**
                 * @description Seconds per step (at least 10); by default the shortest of 10 s,
                 *     30 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 day or 1 week that gives at
                 *     most 120 steps, and 1 day for ranges over 7 days. At most 2,000
                 *     steps. Steps of whole days start at UTC midnight: `since` is moved
                 *     back to the start of its day.
                 */
                step_secs?: number;
                /** @description Only windows of this event (`cpu-clock`, `wall`, ...). */
                event?: string;
                /** @description Only these hosts, comma-separated. */
                hosts?: string;
                /**
                 * @description Only hosts whose agents last reported all of these labels:
                 *     comma-separated `key:value` pairs (`zone:eu-1,version:2.4.1`).
                 *     With `hosts`, the hosts in both.
                 */
                labels?: string;
                /** @description Only threads with this name, or matching it as a regex. */
                thread?: string;
            };
            header?: never;
            path: {
                /** @description Service name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One point per step, gaps included */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrendResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    list_triggers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The triggers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TriggersResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    create_trigger: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateTriggerRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    describe_trigger: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Trigger id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The trigger */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    delete_trigger: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Trigger id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    update_trigger: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Trigger id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateTriggerRequest"];
            };
        };
        responses: {
            /** @description The changed trigger */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    trigger_firings: {
        parameters: {
            query?: {
                /** @description How many, newest first; 50 when absent. */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Trigger id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The latest firings */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TriggerFiringsResponse"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The named profile, schedule or request does not exist. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "status": "ok"
                     *     }
                     */
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description The database does not answer */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    pyroscope_ingest: {
        parameters: {
            query: {
                /**
                 * @description `APP` or `APP{key=value,…}`: the service, with an optional
                 *     profile-type suffix (`checkout.cpu`, `.wall`, `.alloc_space`,
                 *     `.inuse_space`, `.lock_duration`…), and the profile's labels.
                 * @example checkout.cpu{region=eu-west}
                 */
                name: string;
                /** @description Start of the samples' time range, Unix seconds; now when absent. */
                from?: number;
                /**
                 * @description End of the samples' time range, Unix seconds, not before `from`;
                 *     now when absent.
                 */
                until?: number;
                /**
                 * @description The body's format: `folded` (`frame;frame;frame count` lines, the
                 *     default), `lines` (one `frame;frame;frame` line per sample), or
                 *     `pprof` or `jfr`, raw or in the multipart form.
                 */
                format?: "folded" | "lines" | "pprof" | "jfr";
                /**
                 * @description Folded and line stacks: the sampling rate in Hz, which gives their
                 *     period; 100 when absent.
                 */
                sampleRate?: number;
                /** @description The profiler (`pyspy`, `rbspy`, `gospy`…), kept as the label `spy`. */
                spyName?: string;
                /**
                 * @description Folded and line stacks without a suffix in `name`: what they
                 *     count, `samples` (CPU, the default), `bytes` (allocated, or in use
                 *     with `aggregationType=average`) or `lock_nanoseconds`.
                 */
                units?: string;
                /** @description `sum` (the default) or `average`, which makes `bytes` in use. */
                aggregationType?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description At most 32 MiB (128 MiB once a gzip `Content-Encoding` is undone): folded or line stacks (UTF-8 text), a pprof profile or a JFR recording, raw or in a multipart form */
        requestBody: {
            content: {
                "application/octet-stream": components["schemas"]["BinaryBody"];
                "multipart/form-data": components["schemas"]["IngestForm"];
                "text/plain": components["schemas"]["BinaryBody"];
            };
        };
        responses: {
            /** @description Stored, or stored before (a retry) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IngestedProfiles"];
                };
            };
            /** @description Malformed input: a query, path or body that does not parse. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description No bearer token, or an invalid or expired one. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The token's role or services do not allow this. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values that parse but are not acceptable. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
            /** @description The database is unavailable; retry later. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        error: components["schemas"]["ErrorDetail"];
                    };
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OpenMetrics text exposition */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/openmetrics-text": string;
                };
            };
        };
    };
    pyroscope_push: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description A `push.v1.PushRequest` in protocol buffers, at most 32 MiB (128 MiB once a gzip `Content-Encoding` is undone) */
        requestBody: {
            content: {
                "application/proto": components["schemas"]["BinaryBody"];
            };
        };
        responses: {
            /** @description Every profile stored, or stored before (a retry): an empty `push.v1.PushResponse` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/proto": unknown;
                };
            };
            /** @description A body that is not a `PushRequest`, or profiles refused (each named; the others are stored) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectError"];
                };
            };
            /** @description No bearer token, or an invalid or expired one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectError"];
                };
            };
            /** @description The token may not send profiles of a service of the request */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectError"];
                };
            };
            /** @description The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectError"];
                };
            };
            /** @description The database is unavailable; retrying stores nothing twice */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectError"];
                };
            };
        };
    };
    export_otlp_profiles: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description An `ExportProfilesServiceRequest` in protocol buffers or OTLP/JSON, at most 32 MiB (128 MiB once a gzip `Content-Encoding` is undone) */
        requestBody: {
            content: {
                "application/json": components["schemas"]["OtlpExportRequest"];
                "application/x-protobuf": components["schemas"]["BinaryBody"];
            };
        };
        responses: {
            /** @description An `ExportProfilesServiceResponse` in the request's encoding; its `partial_success` counts the profiles refused and names each (the others are stored), and names what was kept but changed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpExportResponse"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
            /** @description Not an OTLP request (malformed protobuf or JSON, or a dictionary whose entry 0 is not the zero value): a `google.rpc.Status` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
            /** @description No bearer token, or an invalid or expired one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
            /** @description The token may not send profiles of a service of the request: nothing of it is stored */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
            /** @description The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
            /** @description A content type other than protobuf or JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                };
            };
            /** @description The database is unavailable (see `Retry-After`); retrying stores nothing twice */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OtlpStatus"];
                    "application/x-protobuf": components["schemas"]["BinaryBody"];
                };
            };
        };
    };
}
