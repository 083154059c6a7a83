// The console's own calls (everything else is REST /v2).
export const IDENTITY_PATH = '/ui/api/identity';
export const WATCH_PATH = '/ui/api/watch';
