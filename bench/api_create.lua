-- wrk script: durable Job creates with unique names per thread and request.
local threads = {}
function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
end

function init(args)
    token = args[1]
    round = args[2] or "0"
    counter = 0
    headers = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
end

function request()
    counter = counter + 1
    local body = string.format(
        '{"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":"b%s-%d-%d","project":"bench"},' ..
        '"spec":{"replicaSpecs":{"Worker":{"template":{"command":["true"]}}}}}', round, tid, counter)
    return wrk.format("POST", "/apis/gantry.dev/v1/projects/bench/jobs", headers, body)
end
