import { NodeServices } from "@effect/platform-node"
import { GoalStateConformance } from "@hostnode/test/conformance"

GoalStateConformance.suite("NodeFileSystem in a scoped temporary directory", NodeServices.layer)
