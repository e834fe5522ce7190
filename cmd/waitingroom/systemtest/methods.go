package systemtest

func (in *Instance) PutRoom(room string, body any) Response {
	in.t.Helper()
	return Do(in.t, "PUT", in.Admin+"/admin/rooms/"+room, TestAdminToken, body)
}
