// Package admin is the native API's endpoints for the service's
// operators (api.Config.Admins): the keys issued in the service
// (/api/v1/admin/keys: issue, list, revoke; the record is store.Keys,
// the secret made by middleware.NewKey and shown once) and the log of
// webhook deliveries (/api/v1/webhooks/deliveries, redelivery; over a
// Webhooks). It is pure HTTP over the services it is given: package api
// mounts it behind its authentication and the operators' gate, and
// answers its errors (Config.Error) as it answers its own.
package admin
