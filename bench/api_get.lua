-- wrk script: GETs of single Jobs spread uniformly over the paths in a file.
function init(args)
    token = args[1]
    paths = {}
    for line in io.lines(args[2]) do
        paths[#paths + 1] = line
    end
    headers = {["Authorization"] = "Bearer " .. token}
    math.randomseed(os.time() + #paths)
end

function request()
    return wrk.format("GET", paths[math.random(#paths)], headers)
end
