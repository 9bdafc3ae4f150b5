// Package paging reads the native API's list parameters and names the
// next page: a whole-number query parameter (Count), a list's
// ?limit=&cursor= as a store.Page (Page), and the X-Next-Cursor header
// of a list whose body API.md gives whole (NextCursor). Its refusals are
// httperr.Problem (400 invalid_parameter). Package api and its endpoint
// packages (api/docs, api/me, api/admin) page through it.
package paging
