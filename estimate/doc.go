// Package estimate owns latency estimation.
package estimate
