-- 0003_room_definitions: the rooms created or changed through the admin
-- API, so that they outlive a Redis that lost its data: the admission loop
-- creates a missing room again from its definition. config is the
-- operator's configuration as a JSON object (roomdefs.go names its
-- fields); fields a later version adds need no migration.

CREATE TABLE room_definitions (
    name       text        PRIMARY KEY,
    config     jsonb       NOT NULL CONSTRAINT room_definitions_config_check CHECK (jsonb_typeof(config) = 'object'),
    updated_at timestamptz NOT NULL DEFAULT now()
);
