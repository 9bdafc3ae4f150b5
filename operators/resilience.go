package operators

import (
	"time"

	"github.com/trellis-ai/trellis/llm"
)

// RemoteToolDefaults are the resilience defaults for remote tool sources:
// 3 attempts, 1 s base and 30 s max backoff, breaker opens after 5
// failures and half-opens after 30 s, 60 s for the whole call (attempts
// and waits, not a user's answers) and no timeout per attempt, 10
// concurrent calls. Zero fields of a source's llm.ResilienceConfig take
// these.
func RemoteToolDefaults() llm.ResilienceConfig {
	return llm.ResilienceConfig{
		MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 30 * time.Second, JitterFactor: 0.2,
		FailureThreshold: 5, BreakerDelay: 30 * time.Second, SuccessThreshold: 1,
		Timeout: 60 * time.Second, AttemptTimeout: -1, MaxConcurrent: 10,
	}
}
