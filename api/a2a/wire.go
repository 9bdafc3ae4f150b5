package a2a

import (
	"encoding/json"
	"time"
)

// The A2A v1.0 objects Trellis reads and writes, in their ProtoJSON
// form: camelCase fields, enums by their names, oneofs as the one field
// set.

// Task states and roles, as ProtoJSON names them.
const (
	stateSubmitted     = "TASK_STATE_SUBMITTED"
	stateWorking       = "TASK_STATE_WORKING"
	stateCompleted     = "TASK_STATE_COMPLETED"
	stateFailed        = "TASK_STATE_FAILED"
	stateCanceled      = "TASK_STATE_CANCELED"
	stateInputRequired = "TASK_STATE_INPUT_REQUIRED"

	roleUser  = "ROLE_USER"
	roleAgent = "ROLE_AGENT"
)

// terminal reports whether a task in state s can change no more.
func terminal(s string) bool {
	return s == stateCompleted || s == stateFailed || s == stateCanceled
}

// part is one piece of a message or an artifact: text or data (Trellis
// takes no files).
type part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
}

func textPart(s string) part { return part{Text: &s} }

func dataPart(v any) part {
	b, _ := json.Marshal(v) // the adapter's own values: cannot fail
	return part{Data: b, MediaType: "application/json"}
}

type message struct {
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	Role      string `json:"role"`
	Parts     []part `json:"parts"`
}

type taskStatus struct {
	State     string   `json:"state"`
	Message   *message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

type artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []part `json:"parts"`
}

type task struct {
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    taskStatus `json:"status"`
	Artifacts []artifact `json:"artifacts,omitempty"`
	History   []message  `json:"history,omitempty"`
}

type statusUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    taskStatus `json:"status"`
}

type artifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// streamResponse is one event of a stream: exactly one field set.
type streamResponse struct {
	Task           *task           `json:"task,omitempty"`
	Message        *message        `json:"message,omitempty"`
	StatusUpdate   *statusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *artifactUpdate `json:"artifactUpdate,omitempty"`
}

// sendMessageRequest is SendMessage's and SendStreamingMessage's params.
type sendMessageRequest struct {
	Message       *message `json:"message"`
	Configuration struct {
		HistoryLength     *int `json:"historyLength"`
		ReturnImmediately bool `json:"returnImmediately"`
	} `json:"configuration"`
	Metadata json.RawMessage `json:"metadata"`
}

// taskRequest is GetTask's, CancelTask's and SubscribeToTask's params.
type taskRequest struct {
	ID            string          `json:"id"`
	HistoryLength *int            `json:"historyLength"`
	Metadata      json.RawMessage `json:"metadata"`
}

type listTasksRequest struct {
	ContextID            string `json:"contextId"`
	Status               string `json:"status"`
	PageSize             *int   `json:"pageSize"`
	PageToken            string `json:"pageToken"`
	HistoryLength        *int   `json:"historyLength"`
	StatusTimestampAfter string `json:"statusTimestampAfter"`
	IncludeArtifacts     bool   `json:"includeArtifacts"`
}

type listTasksResponse struct {
	Tasks         []task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// timestamp is t as ProtoJSON writes a Timestamp.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
