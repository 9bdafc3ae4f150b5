// Package storeutil holds what the store backends share and the store's
// users need not see: the clock, the check that an id can name a
// record, the cursors' encodings, the making of pages, and the splicing
// of an event's sequence number into its data.
//
// Record ids come from internal/ids (ids.New), the one id generator.
package storeutil
