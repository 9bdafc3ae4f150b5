package events

// TaskStatus is where a task of the board is.
type TaskStatus string

const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskDone       TaskStatus = "done"
)

// Valid reports whether s is one of the three statuses.
func (s TaskStatus) Valid() bool {
	return s == TaskPending || s == TaskInProgress || s == TaskDone
}

// Task is one item of the board.
type Task struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Status TaskStatus `json:"status"`
	// Owner is OwnerAgent or a sub-agent's name.
	Owner string `json:"owner"`
	// Position is the task's 0-based place on the board: always its
	// index in TaskBoard.Tasks (positioned sets it after every change, and
	// Agent.Tasks on reading a board saved before positions existed).
	Position int `json:"position"`
}

// TasksUpdated is tasks.updated: the board after a change, whole, each
// task with its position.
type TasksUpdated struct {
	Tasks    []Task `json:"tasks"`
	Revision int    `json:"revision"`
}

// EventType is tasks.updated.
func (*TasksUpdated) EventType() string { return TypeTasksUpdated }
