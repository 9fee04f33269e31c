// Loads the captured server answers (see fixtures/README.md) typed as the generated protocol.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type {
  BudgetMeter,
  ContextPlan,
  GatewayConversation,
  GatewayPreview,
  GatewayRequest,
  GatewayStatus,
  ReviewDecisionResult,
  ReviewRequest,
  ReviewResolved,
  LedgerResult,
  Pin,
  Reflected,
  Reflection,
  RenderedPromptResult,
  Suggestion,
} from "../../src/protocol.generated";

// Bundled by esbuild into out/unit/: resolve the JSON next to the sources.
const dir = join(__dirname, "..", "..", "test", "unit", "fixtures");
const load = <T>(name: string): T => JSON.parse(readFileSync(join(dir, name), "utf8")) as T;

export const plan = () => load<ContextPlan>("plan.json");
export const planPinned = () => load<ContextPlan>("plan-pinned.json");
export const whatIfPlan = () => load<ContextPlan>("whatif.json");
export const meter = () => load<BudgetMeter>("meter.json");
export const ledger = () => load<LedgerResult>("ledger.json");
export const pin = () => load<Pin>("pin.json");
export const renderText = () => load<RenderedPromptResult>("render-text.json");
export const renderOpenai = () => load<RenderedPromptResult>("render-openai.json");
// The reflection loop (scripts/capture-reflection.py): a session where the server leased
// calculate_invoice_total automatically, the model suggested two items, then a new task ended it.
export const reflectionPlan = () => load<ContextPlan>("reflection-plan.json");
export const reflectionPins = () => load<Pin[]>("reflection-pins.json");
export const suggestions = () => load<Suggestion[]>("reflection-suggestions.json");
export const reflections = () => load<Reflection[]>("reflection-reflections.json");
export const reflected = () => load<Reflected[]>("reflection-reflected.json");
// The gateway in the editor's server (scripts/capture-gateway.py): two conversations through it,
// then review before send with a pin and a re-plan.
export const gatewayStatus = () => load<GatewayStatus>("gateway-status.json");
export const gatewayRequests = () => load<GatewayRequest[]>("gateway-requests.json");
export const conversations = () => load<GatewayConversation[]>("gateway-conversations.json");
export const gatewayPreview = () => load<GatewayPreview>("gateway-preview.json");
export const reviewRequest = () => load<ReviewRequest>("review-request.json");
export const reviewReplanned = () => load<ReviewRequest>("review-replanned.json");
export const reviewDecision = () => load<ReviewDecisionResult>("review-decision.json");
export const reviewResolved = () => load<ReviewResolved>("review-resolved.json");
