package ingest

import "context"

// HoldExtractionSlots takes every extraction slot until the returned
// function is called, for tests of what waits for one.
func (s *Service) HoldExtractionSlots() func() {
	for range cap(s.slots) {
		s.slots <- struct{}{}
	}
	return func() {
		for range cap(s.slots) {
			<-s.slots
		}
	}
}

// ClearStranded runs the periodic job's work once.
func (s *Service) ClearStranded(ctx context.Context) (int, error) { return s.clearStranded(ctx) }
