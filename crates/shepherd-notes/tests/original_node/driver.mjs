// Drives the original pi-shepherd's fieldnotes store — its own `artifact-sessions.ts`, run by
// Node with its types stripped — for Shepherd's interop tests.
//
//   node --experimental-strip-types driver.mjs <artifact-sessions.ts> '<steps as JSON>'
//
// Each step is what the original's extension does at one moment: bind a parent pi session
// (`resolveParent`), find or create a session by name (`named`), or delegate one task in the
// session the previous step found (`delegate`: reserve a note, start it, finalise it, as its
// task lifecycle does). It prints one JSON line: the session directory and the notes it made.
import { pathToFileURL } from "node:url";

const [, , modulePath, stepsJson] = process.argv;
const store = await import(pathToFileURL(modulePath).href);
let session;
const notes = [];
for (const step of JSON.parse(stepsJson)) {
	switch (step.op) {
		case "resolveParent":
			session = store.resolveOrCreateParentArtifactSession({
				parentPiSessionIdentity: step.identity,
				projectRoot: step.projectRoot,
			});
			break;
		case "named":
			session = store.createOrResumeSession({ projectRoot: step.projectRoot, sessionName: step.name });
			break;
		case "delegate": {
			const [note] = store.reserveArtifacts(session, [{ agent: step.agent, mode: "single", task: step.task }]);
			store.markArtifactStarted(session, note, { taskId: step.taskId });
			store.finalizeArtifact(session, note, { status: "completed", output: step.output });
			notes.push(note.fileName);
			break;
		}
		default:
			throw new Error(`unknown step ${step.op}`);
	}
}
console.log(JSON.stringify({ sessionPath: session?.sessionPath, resumed: session?.resumed, notes }));
